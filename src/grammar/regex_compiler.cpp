// Regular expressions -> Grammar IR: a recursive-descent parser over the supported subset.
#include "grammar/regex_compiler.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "grammar/ebnf_parser.h"
#include "grammar/utf8.h"

namespace sgl::grammar {
namespace {

const std::vector<CodePointRange> kDigit = {{'0', '9'}};
const std::vector<CodePointRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const std::vector<CodePointRange> kSpace = {{'\t', '\r'}, {' ', ' '}};
// ECMA-262's \s (JSON Schema's pattern dialect): White_Space and the BOM. As a schema validator
// reads it, \S must exclude these too.
const std::vector<CodePointRange> kEcmaSpace = {
    {'\t', '\r'},     {' ', ' '},       {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
    {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};

std::string json_escape(uint32_t cp) {
  switch (cp) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    default: {
      static const char kHex[] = "0123456789abcdef";
      return std::string("\\u00") + kHex[cp >> 4] + kHex[cp & 15];
    }
  }
}

class RegexParser {
 public:
  RegexParser(Grammar& g, std::string_view pattern, const RegexOptions& options)
      : g_(g),
        p_(pattern),
        options_(options),
        escaped_(json_escaped_chars(options.escape_less_than)) {}

  Result<ExprId> parse() {
    if (p_.size() > kMaxGrammarTextBytes) return error_at(0, "pattern too long");
    SGL_ASSIGN_OR_RETURN(ExprId e, parse_alternation(0));
    if (pos_ < p_.size()) {
      // Only an unbalanced ')' stops the top level early.
      return error("unbalanced ')'");
    }
    return e;
  }

 private:
  Status error_at(size_t pos, const std::string& reason) const {
    return invalid_argument("regex: at offset " + std::to_string(pos) + ": " + reason);
  }
  Status error(const std::string& reason) const { return error_at(pos_, reason); }
  bool at_end() const { return pos_ >= p_.size(); }
  char peek() const { return at_end() ? '\0' : p_[pos_]; }
  bool lookahead(std::string_view s) const { return p_.substr(pos_, s.size()) == s; }

  Result<ExprId> parse_alternation(int depth) {
    if (depth > kMaxNestingDepth) return error("groups nested too deeply");
    std::vector<ExprId> alts;
    while (true) {
      SGL_ASSIGN_OR_RETURN(ExprId seq, parse_concat(depth));
      alts.push_back(seq);
      if (peek() != '|') break;
      ++pos_;
    }
    return g_.choice(std::move(alts));
  }

  Result<ExprId> parse_concat(int depth) {
    std::vector<ExprId> items;
    const size_t start = pos_;
    while (!at_end() && peek() != '|' && peek() != ')') {
      const char c = peek();
      if (c == '^') {
        if (depth != 0 || pos_ != start) {
          return error("anchor '^' is only supported at the start of the pattern");
        }
        ++pos_;
        continue;
      }
      if (c == '$') {
        ++pos_;
        if (depth != 0 || !(at_end() || peek() == '|')) {
          return error_at(pos_ - 1, "anchor '$' is only supported at the end of the pattern");
        }
        continue;
      }
      SGL_ASSIGN_OR_RETURN(ExprId atom, parse_atom(depth));
      SGL_ASSIGN_OR_RETURN(atom, parse_quantifier(atom));
      items.push_back(atom);
    }
    if (items.empty()) return g_.empty();
    return g_.sequence(std::move(items));
  }

  // "{,n}" at pos_: {0,n} in Python, a literal in PCRE2 10.42.
  bool at_open_upper_bound() const {
    size_t p = pos_ + 2;
    if (!lookahead("{,")) return false;
    const size_t digits = p;
    while (p < p_.size() && std::isdigit(static_cast<unsigned char>(p_[p]))) ++p;
    return p > digits && p < p_.size() && p_[p] == '}';
  }

  // {m}, {m,}, {m,n} at pos_; false (pos_ unchanged) when `{` is a literal there.
  bool scan_braces(int64_t& min, int64_t& max) {
    size_t p = pos_ + 1;
    auto number = [&](int64_t& v) {
      const size_t s = p;
      v = 0;
      while (p < p_.size() && std::isdigit(static_cast<unsigned char>(p_[p]))) {
        v = std::min<int64_t>(v * 10 + (p_[p] - '0'), int64_t{1} << 40);
        ++p;
      }
      return p > s;
    };
    if (!number(min)) return false;
    max = min;
    if (p < p_.size() && p_[p] == ',') {
      ++p;
      if (!number(max)) max = kUnbounded;
    }
    if (p >= p_.size() || p_[p] != '}') return false;
    pos_ = p + 1;
    return true;
  }

  Result<ExprId> parse_quantifier(ExprId atom) {
    int64_t min = 0, max = 0;
    const size_t start = pos_;
    const char c = peek();
    if (c == '*') {
      ++pos_;
      min = 0;
      max = kUnbounded;
    } else if (c == '+') {
      ++pos_;
      min = 1;
      max = kUnbounded;
    } else if (c == '?') {
      ++pos_;
      min = 0;
      max = 1;
    } else if (c == '{') {
      if (at_open_upper_bound()) {
        return error("'{,n}' is ambiguous across regex dialects; write {0,n}");
      }
      if (!scan_braces(min, max)) return atom;  // a literal '{' (PCRE's reading)
      if (min > kMaxRepeatBound || max > kMaxRepeatBound) {
        return error_at(start, "repetition bound above " + std::to_string(kMaxRepeatBound));
      }
      if (max != kUnbounded && max < min) {
        return error_at(start, "repetition: the maximum is below the minimum");
      }
    } else {
      return atom;
    }
    if (peek() == '?') {
      ++pos_;  // lazy: the same language
    } else if (peek() == '+') {
      return error("possessive quantifiers are not supported");
    }
    if (!at_end() && (peek() == '*' || peek() == '+' || peek() == '?' || (peek() == '{' && [&] {
                        const size_t saved = pos_;
                        int64_t a = 0, b = 0;
                        const bool q = scan_braces(a, b);
                        pos_ = saved;
                        return q;
                      }()))) {
      return error("a quantifier cannot follow another");
    }
    return g_.repeat(atom, static_cast<int32_t>(min), static_cast<int32_t>(max));
  }

  Result<ExprId> parse_atom(int depth) {
    const size_t start = pos_;
    const char c = peek();
    switch (c) {
      case '*':
      case '+':
      case '?':
        return error("nothing to repeat before '" + std::string(1, c) + "'");
      case '(': {
        ++pos_;
        if (peek() == '?') SGL_RETURN_IF_ERROR(parse_group_prefix(start));
        SGL_ASSIGN_OR_RETURN(ExprId inner, parse_alternation(depth + 1));
        if (peek() != ')') return error_at(start, "unclosed '('");
        ++pos_;
        return inner;
      }
      case '[':
        return parse_class();
      case '.':
        ++pos_;
        return class_expr({{0, '\n' - 1}, {'\n' + 1, kMaxCodePoint}});
      case '\\':
        return parse_escape_atom();
      default:
        break;
    }
    size_t p = pos_;
    const int32_t cp = decode_utf8(p_, p);
    if (cp < 0) return error("invalid UTF-8");
    pos_ = p;
    return literal(static_cast<uint32_t>(cp));
  }

  // After "(?": accepts non-capturing and named groups; names what else it is.
  Status parse_group_prefix(size_t start) {
    ++pos_;  // '?'
    if (peek() == ':') {
      ++pos_;
      return Status::ok_status();
    }
    if (lookahead("=") || lookahead("!")) return error_at(start, "lookahead is not supported");
    if (lookahead("<=") || lookahead("<!")) return error_at(start, "lookbehind is not supported");
    if (lookahead("P=")) return error_at(start, "backreferences are not supported");
    if (lookahead(">")) return error_at(start, "atomic groups are not supported");
    if (lookahead("#")) return error_at(start, "regex comments are not supported");
    if (lookahead("P<") || lookahead("<") || lookahead("'")) {
      const char close = peek() == '\'' ? '\'' : '>';
      pos_ += lookahead("P<") ? 2 : 1;
      const size_t name_start = pos_;
      while (!at_end() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_')) {
        ++pos_;
      }
      if (pos_ == name_start || peek() != close) return error_at(start, "malformed group name");
      ++pos_;
      return Status::ok_status();
    }
    return error_at(start, "inline flags and other (? groups are not supported");
  }

  // An escape outside a class.
  Result<ExprId> parse_escape_atom() {
    const size_t start = pos_;
    ++pos_;
    if (at_end()) return error_at(start, "trailing backslash");
    const char e = peek();
    if (e >= '1' && e <= '9') return error_at(start, "backreferences are not supported");
    if (e == 'k') return error_at(start, "backreferences are not supported");
    if (e == 'b' || e == 'B') return error_at(start, "word boundaries are not supported");
    if (e == 'A' || e == 'z' || e == 'Z' || e == 'G') {
      return error_at(start, "anchor '\\" + std::string(1, e) + "' is not supported");
    }
    std::vector<CodePointRange> ranges;
    SGL_ASSIGN_OR_RETURN(bool is_class, parse_escape(start, ranges));
    if (is_class) return class_expr(ranges);
    return literal(ranges[0].lo);
  }

  // After the backslash (pos_ at the escape letter). Fills `ranges` with the escape's set and
  // returns whether it is a class (\d ...) rather than one code point.
  Result<bool> parse_escape(size_t start, std::vector<CodePointRange>& ranges) {
    const char e = p_[pos_++];
    auto one = [&](uint32_t cp) {
      ranges = {{cp, cp}};
      return false;
    };
    switch (e) {
      case 'd':
        ranges = kDigit;
        return true;
      case 'w':
        ranges = kWord;
        return true;
      case 's':
        ranges = options_.json_string ? kEcmaSpace : kSpace;
        return true;
      case 'D':
        ranges = normalize_ranges(kDigit, true);
        return true;
      case 'W':
        ranges = normalize_ranges(kWord, true);
        return true;
      case 'S':
        ranges = normalize_ranges(options_.json_string ? kEcmaSpace : kSpace, true);
        return true;
      case 'n':
        return one('\n');
      case 'r':
        return one('\r');
      case 't':
        return one('\t');
      case 'f':
        return one('\f');
      case 'v':
        return one('\v');
      case 'a':
        return one('\a');
      case 'e':
        return one(0x1B);
      case '0':
        return one(0);
      case 'x': {
        if (peek() == '{') {
          ++pos_;
          SGL_ASSIGN_OR_RETURN(uint32_t cp, parse_hex(start, 1, 8, '}'));
          return one(cp);
        }
        SGL_ASSIGN_OR_RETURN(uint32_t cp, parse_hex(start, 2, 2, 0));
        return one(cp);
      }
      case 'u': {
        SGL_ASSIGN_OR_RETURN(uint32_t cp, parse_hex(start, 4, 4, 0));
        return one(cp);
      }
      case 'p':
      case 'P':
        return error_at(start, "Unicode properties (\\p, \\P) are not supported");
      default:
        break;
    }
    if (std::isalnum(static_cast<unsigned char>(e))) {
      return error_at(start, "unknown escape '\\" + std::string(1, e) + "'");
    }
    if (static_cast<unsigned char>(e) >= 0x80) {
      --pos_;
      size_t p = pos_;
      const int32_t cp = decode_utf8(p_, p);
      if (cp < 0) return error("invalid UTF-8");
      pos_ = p;
      return one(static_cast<uint32_t>(cp));
    }
    return one(static_cast<unsigned char>(e));
  }

  Result<uint32_t> parse_hex(size_t start, int min_digits, int max_digits, char close) {
    uint32_t v = 0;
    int n = 0;
    while (n < max_digits && !at_end() && std::isxdigit(static_cast<unsigned char>(peek()))) {
      const char h = p_[pos_++];
      v = v * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (h | 0x20) - 'a' + 10);
      ++n;
    }
    if (n < min_digits) return error_at(start, "malformed hex escape");
    if (close != 0) {
      if (peek() != close) return error_at(start, "malformed hex escape");
      ++pos_;
    }
    if (v > kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF)) {
      return error_at(start, "escape is not a Unicode scalar value");
    }
    return v;
  }

  Result<ExprId> parse_class() {
    const size_t start = pos_;
    ++pos_;
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++pos_;
    }
    std::vector<CodePointRange> ranges;
    bool first = true;
    while (true) {
      if (at_end()) return error_at(start, "unterminated character class");
      if (peek() == ']' && !first) break;
      first = false;
      if (lookahead("[:")) return error("POSIX character classes are not supported");
      SGL_ASSIGN_OR_RETURN(auto lo, parse_class_item());
      if (lo.second) {  // a class escape (\d ...) cannot start a range
        ranges.insert(ranges.end(), lo.first.begin(), lo.first.end());
        continue;
      }
      uint32_t hi = lo.first[0].lo;
      if (peek() == '-' && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        ++pos_;
        SGL_ASSIGN_OR_RETURN(auto h, parse_class_item());
        if (h.second) return error("a class escape cannot end a range");
        hi = h.first[0].lo;
        if (hi < lo.first[0].lo) return error("character class range is reversed");
      }
      ranges.push_back({lo.first[0].lo, hi});
    }
    ++pos_;
    return class_expr(normalize_ranges(std::move(ranges), negated));
  }

  // One class member: (its ranges, whether it is a class escape).
  Result<std::pair<std::vector<CodePointRange>, bool>> parse_class_item() {
    std::vector<CodePointRange> ranges;
    if (peek() == '\\') {
      const size_t start = pos_;
      ++pos_;
      if (at_end()) return error_at(start, "trailing backslash");
      if (peek() == 'b') {  // backspace inside a class
        ++pos_;
        return std::make_pair(std::vector<CodePointRange>{{8, 8}}, false);
      }
      SGL_ASSIGN_OR_RETURN(bool is_class, parse_escape(start, ranges));
      return std::make_pair(std::move(ranges), is_class);
    }
    size_t p = pos_;
    const int32_t cp = decode_utf8(p_, p);
    if (cp < 0) return error("invalid UTF-8");
    pos_ = p;
    const auto u = static_cast<uint32_t>(cp);
    return std::make_pair(std::vector<CodePointRange>{{u, u}}, false);
  }

  ExprId literal(uint32_t cp) {
    std::string bytes;
    if (options_.json_string && escaped(cp)) {
      bytes = json_escape(cp);
    } else {
      append_utf8(bytes, cp);
    }
    return g_.bytes(bytes);
  }

  // A set of code points (normalized ranges); in JSON-string mode the ones that need escapes
  // become their escape sequences.
  ExprId class_expr(std::vector<CodePointRange> ranges) {
    ranges = normalize_ranges(std::move(ranges), false);
    if (!options_.json_string) return g_.char_class(std::move(ranges));
    std::vector<ExprId> alts;
    for (const CodePointRange& r : intersect_ranges(ranges, escaped_)) {
      for (uint32_t cp = r.lo; cp <= r.hi; ++cp) alts.push_back(g_.bytes(json_escape(cp)));
    }
    std::vector<CodePointRange> plain =
        intersect_ranges(ranges, normalize_ranges(escaped_, /*negate=*/true));
    if (!plain.empty()) alts.insert(alts.begin(), g_.char_class(std::move(plain)));
    if (alts.empty()) return g_.char_class({});  // empty set: matches nothing
    return g_.choice(std::move(alts));
  }

  // Whether JSON-string mode produces `cp` as an escape.
  bool escaped(uint32_t cp) const {
    return std::any_of(escaped_.begin(), escaped_.end(),
                       [cp](const CodePointRange& r) { return r.lo <= cp && cp <= r.hi; });
  }

  Grammar& g_;
  std::string_view p_;
  RegexOptions options_;
  std::vector<CodePointRange> escaped_;  // json_escaped_chars
  size_t pos_ = 0;
};

}  // namespace

std::vector<CodePointRange> json_escaped_chars(bool escape_less_than) {
  std::vector<CodePointRange> chars = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
  if (escape_less_than) chars.push_back({'<', '<'});
  return normalize_ranges(std::move(chars), false);
}

Result<ExprId> compile_regex(Grammar& grammar, std::string_view pattern,
                             const RegexOptions& options) {
  return RegexParser(grammar, pattern, options).parse();
}

Result<Grammar> regex_to_grammar(std::string_view pattern) {
  Grammar g;
  const RuleId root = g.add_rule("root");
  SGL_ASSIGN_OR_RETURN(ExprId body, compile_regex(g, pattern));
  g.set_body(root, body);
  g.set_root(root);
  return g;
}

}  // namespace sgl::grammar
