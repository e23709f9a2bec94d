// Length ranges of string content expressions, and narrowing the one varying part.
#include "grammar/string_length.h"

#include <algorithm>
#include <string>
#include <vector>

namespace sgl::grammar {
namespace {

// Lengths past this saturate (nested repetitions multiply; no bound of ours comes near it).
constexpr int64_t kLengthCap = int64_t{1} << 40;

int64_t capped(int64_t v) { return std::min(v, kLengthCap); }

// Decoded characters in JSON string content: an escape (\x or \uXXXX) is one, as is each UTF-8
// code point.
int64_t decoded_chars(const std::string& bytes) {
  int64_t n = 0;
  for (size_t i = 0; i < bytes.size(); ++n) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c == '\\') {
      i += i + 1 < bytes.size() && bytes[i + 1] == 'u' ? 6 : 2;
    } else {
      ++i;
      while (i < bytes.size() && (static_cast<unsigned char>(bytes[i]) & 0xC0) == 0x80) ++i;
    }
  }
  return n;
}

bool fixed_length(const LengthRange& r, int64_t n) { return r.min == n && r.max == n; }

}  // namespace

std::optional<LengthRange> content_length(const Grammar& g, ExprId content) {
  const Expr& e = g.expr(content);
  switch (e.kind) {
    case ExprKind::kBytes: {
      const int64_t n = decoded_chars(e.bytes);
      return LengthRange{n, n};
    }
    case ExprKind::kCharClass:
      return LengthRange{1, 1};
    case ExprKind::kRuleRef:
      return std::nullopt;
    case ExprKind::kSequence: {
      LengthRange sum{0, int64_t{0}};
      for (ExprId c : e.children) {
        const std::optional<LengthRange> r = content_length(g, c);
        if (!r) return std::nullopt;
        sum.min = capped(sum.min + r->min);
        if (sum.max && r->max) {
          sum.max = capped(*sum.max + *r->max);
        } else {
          sum.max.reset();
        }
      }
      return sum;
    }
    case ExprKind::kChoice: {
      std::optional<LengthRange> out;
      for (ExprId c : e.children) {
        const std::optional<LengthRange> r = content_length(g, c);
        if (!r) return std::nullopt;
        if (!out) {
          out = r;
          continue;
        }
        out->min = std::min(out->min, r->min);
        if (out->max && r->max) {
          out->max = std::max(*out->max, *r->max);
        } else {
          out->max.reset();
        }
      }
      return out.value_or(LengthRange{0, int64_t{0}});
    }
    case ExprKind::kRepeat: {
      const std::optional<LengthRange> r = content_length(g, e.children[0]);
      if (!r) return std::nullopt;
      LengthRange out{capped(r->min * e.min), std::nullopt};
      if (r->max && *r->max == 0) {
        out.max = 0;
      } else if (r->max && e.max != kUnbounded) {
        out.max = capped(*r->max * e.max);
      }
      return out;
    }
  }
  return std::nullopt;
}

Result<ExprId> restrict_length(Grammar& g, ExprId content, int64_t lo, std::optional<int64_t> hi) {
  const std::optional<LengthRange> r = content_length(g, content);
  if (!r) return invalid_argument("minLength / maxLength beside a recursive pattern");
  if (r->min >= lo && (!hi || (r->max && *r->max <= *hi))) return content;
  if ((hi && r->min > *hi) || (r->max && *r->max < lo)) {
    return invalid_argument(
        "no string of the pattern / format has a length within minLength / "
        "maxLength");
  }
  // A repetition of single characters, with `fixed` characters around it: its bounds narrowed.
  auto narrow = [&](ExprId rep, int64_t fixed) -> std::optional<ExprId> {
    const Expr& x = g.expr(rep);
    if (x.kind != ExprKind::kRepeat) return std::nullopt;
    const std::optional<LengthRange> one = content_length(g, x.children[0]);
    if (!one || !fixed_length(*one, 1)) return std::nullopt;
    const ExprId child = x.children[0];
    const int64_t min = std::max<int64_t>(x.min, lo - fixed);
    int64_t max = x.max == kUnbounded ? kLengthCap : x.max;
    if (hi) max = std::min(max, *hi - fixed);
    if (max < min) return std::nullopt;  // no length fits: refused below
    return g.repeat(child, static_cast<int32_t>(min),
                    max == kLengthCap ? kUnbounded : static_cast<int32_t>(max));
  };
  if (auto e = narrow(content, 0)) return *e;
  if (g.expr(content).kind == ExprKind::kSequence) {
    std::vector<ExprId> parts = g.expr(content).children;
    int64_t fixed = 0;
    std::optional<size_t> varying;
    for (size_t i = 0; i < parts.size(); ++i) {
      const LengthRange p = *content_length(g, parts[i]);
      if (fixed_length(p, p.min)) {
        fixed += p.min;
      } else if (varying) {
        varying.reset();
        fixed = -1;
        break;
      } else {
        varying = i;
      }
    }
    if (varying && fixed >= 0) {
      if (auto e = narrow(parts[*varying], fixed)) {
        parts[*varying] = *e;
        return g.sequence(std::move(parts));
      }
    }
  }
  return invalid_argument(
      "minLength / maxLength beside a pattern / format whose length varies other than in one "
      "repetition of single characters are not supported");
}

}  // namespace sgl::grammar
