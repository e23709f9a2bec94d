// Grammar IR: builders, range normalization and the EBNF printer.
#include "grammar/grammar.h"

#include <algorithm>
#include <cstdio>
#include <functional>

namespace sgl::grammar {

RuleId Grammar::add_rule(std::string_view name) {
  RuleId existing = find_rule(name);
  if (existing >= 0) return existing;
  rules_.push_back(Rule{std::string(name), -1});
  const auto id = static_cast<RuleId>(rules_.size() - 1);
  rule_ids_.emplace(std::string(name), id);
  return id;
}

RuleId Grammar::find_rule(std::string_view name) const {
  auto it = rule_ids_.find(std::string(name));
  return it == rule_ids_.end() ? -1 : it->second;
}

std::string Grammar::fresh_name(std::string_view base) const {
  std::string name(base);
  int& next = next_suffix_[name];
  while (find_rule(name) >= 0) name = std::string(base) + "_" + std::to_string(++next);
  return name;
}

RuleId Grammar::import_rules(const Grammar& src, std::string_view prefix) {
  std::vector<RuleId> ids(src.num_rules());
  for (RuleId r = 0; r < src.num_rules(); ++r) {
    ids[r] = add_rule(fresh_name(std::string(prefix) + src.rule(r).name));
  }
  std::function<ExprId(ExprId)> copy = [&](ExprId id) -> ExprId {
    const Expr& e = src.expr(id);
    std::vector<ExprId> children;
    for (ExprId c : e.children) children.push_back(copy(c));
    switch (e.kind) {
      case ExprKind::kBytes:
        return bytes(e.bytes);
      case ExprKind::kCharClass:
        return char_class(e.ranges, e.negated);
      case ExprKind::kSequence:
        return sequence(std::move(children));
      case ExprKind::kChoice:
        return choice(std::move(children));
      case ExprKind::kRuleRef:
        return ref(ids[e.rule]);
      case ExprKind::kRepeat:
        return repeat(children[0], e.min, e.max);
    }
    return empty();
  };
  for (RuleId r = 0; r < src.num_rules(); ++r) {
    if (src.rule(r).body >= 0) set_body(ids[r], copy(src.rule(r).body));
  }
  return ids[src.root()];
}

ExprId Grammar::add(Expr expr) {
  exprs_.push_back(std::move(expr));
  return static_cast<ExprId>(exprs_.size() - 1);
}

ExprId Grammar::bytes(std::string_view literal) {
  Expr e;
  e.kind = ExprKind::kBytes;
  e.bytes = std::string(literal);
  return add(std::move(e));
}

ExprId Grammar::char_class(std::vector<CodePointRange> ranges, bool negated) {
  Expr e;
  e.kind = ExprKind::kCharClass;
  e.ranges = std::move(ranges);
  e.negated = negated;
  return add(std::move(e));
}

ExprId Grammar::sequence(std::vector<ExprId> children) {
  if (children.size() == 1) return children[0];
  Expr e;
  e.kind = ExprKind::kSequence;
  e.children = std::move(children);
  return add(std::move(e));
}

ExprId Grammar::choice(std::vector<ExprId> children) {
  if (children.size() == 1) return children[0];
  Expr e;
  e.kind = ExprKind::kChoice;
  e.children = std::move(children);
  return add(std::move(e));
}

ExprId Grammar::one_of(const std::vector<std::string>& literals) {
  std::vector<ExprId> choices;
  for (const std::string& literal : literals) choices.push_back(bytes(literal));
  return choices.empty() ? empty() : choice(std::move(choices));
}

ExprId Grammar::ref(RuleId rule) {
  Expr e;
  e.kind = ExprKind::kRuleRef;
  e.rule = rule;
  return add(std::move(e));
}

ExprId Grammar::repeat(ExprId child, int32_t min, int32_t max) {
  Expr e;
  e.kind = ExprKind::kRepeat;
  e.children = {child};
  e.min = min;
  e.max = max;
  return add(std::move(e));
}

std::vector<CodePointRange> normalize_ranges(std::vector<CodePointRange> ranges, bool negate) {
  std::sort(ranges.begin(), ranges.end(),
            [](const CodePointRange& a, const CodePointRange& b) { return a.lo < b.lo; });
  std::vector<CodePointRange> merged;
  for (const CodePointRange& r : ranges) {
    if (r.lo > r.hi) continue;
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  if (!negate) return merged;
  std::vector<CodePointRange> complement;
  uint32_t next = 0;
  for (const CodePointRange& r : merged) {
    if (r.lo > next) complement.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) complement.push_back({next, kMaxCodePoint});
  return complement;
}

std::vector<CodePointRange> intersect_ranges(const std::vector<CodePointRange>& a,
                                             const std::vector<CodePointRange>& b) {
  std::vector<CodePointRange> both;
  for (const CodePointRange& x : a) {
    for (const CodePointRange& y : b) {
      const uint32_t lo = std::max(x.lo, y.lo), hi = std::min(x.hi, y.hi);
      if (lo <= hi) both.push_back({lo, hi});
    }
  }
  return normalize_ranges(std::move(both), false);
}

namespace {

// One code point (or byte) as it appears inside "..." or [...] in our EBNF.
void append_escaped(std::string& out, uint32_t cp, bool in_class) {
  switch (cp) {
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    case '\\':
      out += "\\\\";
      return;
    default:
      break;
  }
  if ((!in_class && cp == '"') || (in_class && (cp == ']' || cp == '-' || cp == '^'))) {
    out += '\\';
    out += static_cast<char>(cp);
    return;
  }
  char buf[16];
  if (cp < 0x20 || cp == 0x7F) {
    std::snprintf(buf, sizeof(buf), "\\x%02X", cp);
  } else if (cp < 0x80) {
    buf[0] = static_cast<char>(cp);
    buf[1] = 0;
  } else if (cp <= 0xFFFF) {
    std::snprintf(buf, sizeof(buf), "\\u%04X", cp);
  } else {
    std::snprintf(buf, sizeof(buf), "\\U%08X", cp);
  }
  out += buf;
}

}  // namespace

std::string Grammar::expr_to_string(ExprId id) const {
  const Expr& e = exprs_[id];
  std::string out;
  switch (e.kind) {
    case ExprKind::kBytes:
      out += '"';
      // Bytes >= 0x80 are printed raw: the front ends only build valid UTF-8 literals.
      for (unsigned char c : e.bytes) {
        if (c >= 0x80) {
          out += static_cast<char>(c);
        } else {
          append_escaped(out, c, false);
        }
      }
      out += '"';
      return out;
    case ExprKind::kCharClass:
      out += e.negated ? "[^" : "[";
      for (const CodePointRange& r : e.ranges) {
        append_escaped(out, r.lo, true);
        if (r.hi != r.lo) {
          out += '-';
          append_escaped(out, r.hi, true);
        }
      }
      out += ']';
      return out;
    case ExprKind::kSequence:
    case ExprKind::kChoice: {
      out += '(';
      for (size_t i = 0; i < e.children.size(); ++i) {
        if (i > 0) out += e.kind == ExprKind::kChoice ? " | " : " ";
        out += expr_to_string(e.children[i]);
      }
      out += ')';
      return out;
    }
    case ExprKind::kRuleRef:
      return rules_[e.rule].name;
    case ExprKind::kRepeat:
      // NOTE: appends, not `"(" + ...`: GCC 12 warns (-Wrestrict) on that at -O3 here.
      out += '(';
      out += expr_to_string(e.children[0]);
      out += ')';
      if (e.min == 0 && e.max == kUnbounded) return out + "*";
      if (e.min == 1 && e.max == kUnbounded) return out + "+";
      if (e.min == 0 && e.max == 1) return out + "?";
      out += '{';
      out += std::to_string(e.min);
      if (e.max != e.min) {
        out += ",";
        if (e.max != kUnbounded) out += std::to_string(e.max);
      }
      return out + "}";
  }
  return out;
}

std::string Grammar::to_string() const {
  std::string out;
  for (const Rule& r : rules_) {
    out += r.name + " ::= " + (r.body >= 0 ? expr_to_string(r.body) : "\"\"") + "\n";
  }
  return out;
}

}  // namespace sgl::grammar
