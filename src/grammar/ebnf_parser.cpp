// EBNF (GBNF / xgrammar style) text -> Grammar IR: a recursive-descent parser.
#include "grammar/ebnf_parser.h"

#include <cctype>
#include <string>
#include <unordered_map>

#include "grammar/utf8.h"

namespace sgl::grammar {
namespace {

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

class EbnfParser {
 public:
  explicit EbnfParser(std::string_view text) : text_(text) {}

  Result<Grammar> parse(std::string_view root_name) {
    if (text_.size() > kMaxGrammarTextBytes) {
      return invalid_argument("grammar: text of " + std::to_string(text_.size()) +
                              " bytes exceeds the limit of " +
                              std::to_string(kMaxGrammarTextBytes));
    }
    skip_space();
    while (pos_ < text_.size()) {
      SGL_RETURN_IF_ERROR(parse_rule());
      skip_space();
    }
    for (RuleId r = 0; r < g_.num_rules(); ++r) {
      if (g_.rule(r).body < 0) {
        return error_at(first_use_[r], "undefined rule '" + g_.rule(r).name + "'");
      }
    }
    RuleId root = g_.find_rule(root_name);
    if (root < 0) {
      return invalid_argument("grammar: no rule named '" + std::string(root_name) +
                              "' (the root rule)");
    }
    g_.set_root(root);
    return std::move(g_);
  }

 private:
  Status error_at(size_t pos, const std::string& reason) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return invalid_argument("grammar: line " + std::to_string(line) + ", column " +
                            std::to_string(col) + ": " + reason);
  }
  Status error(const std::string& reason) const { return error_at(pos_, reason); }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  // Spaces, newlines and # comments.
  void skip_space() {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c == '#') {
        while (!at_end() && text_[pos_] != '\n') ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view scan_name() {
    const size_t start = pos_;
    if (!at_end() && is_name_start(text_[pos_])) {
      ++pos_;
      while (!at_end() && is_name_char(text_[pos_])) ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }

  // Whether a `name ::=` starts at pos_ (the start of the next rule).
  bool at_rule_start() {
    const size_t saved = pos_;
    const bool named = !scan_name().empty();
    skip_space();
    const bool result = named && text_.substr(pos_, 3) == "::=";
    pos_ = saved;
    return result;
  }

  Status parse_rule() {
    const size_t start = pos_;
    std::string_view name = scan_name();
    if (name.empty()) return error("expected a rule name");
    skip_space();
    if (text_.substr(pos_, 3) != "::=") return error("expected '::=' after rule name");
    pos_ += 3;
    RuleId rule = g_.add_rule(name);
    if (g_.rule(rule).body >= 0) {
      return error_at(start, "rule '" + std::string(name) + "' is defined twice");
    }
    note_use(rule, start);
    SGL_ASSIGN_OR_RETURN(ExprId body, parse_alternatives(0));
    if (!at_end() && !at_rule_start()) {
      if (peek() == ')') return error("unbalanced ')'");
      return error("unexpected character '" + std::string(1, peek()) + "'");
    }
    g_.set_body(rule, body);
    return Status::ok_status();
  }

  Result<ExprId> parse_alternatives(int depth) {
    if (depth > kMaxNestingDepth)
      return error("nesting deeper than " + std::to_string(kMaxNestingDepth));
    std::vector<ExprId> alts;
    while (true) {
      SGL_ASSIGN_OR_RETURN(ExprId seq, parse_sequence(depth));
      alts.push_back(seq);
      skip_space();
      if (peek() != '|') break;
      ++pos_;
    }
    return g_.choice(std::move(alts));
  }

  Result<ExprId> parse_sequence(int depth) {
    std::vector<ExprId> items;
    while (true) {
      skip_space();
      if (at_end() || peek() == '|' || peek() == ')' || at_rule_start()) break;
      SGL_ASSIGN_OR_RETURN(ExprId atom, parse_atom(depth));
      skip_space();
      SGL_ASSIGN_OR_RETURN(atom, parse_quantifier(atom));
      items.push_back(atom);
    }
    if (items.empty()) return g_.empty();
    return g_.sequence(std::move(items));
  }

  Result<ExprId> parse_quantifier(ExprId atom) {
    const char c = peek();
    ExprId out = atom;
    if (c == '*') {
      ++pos_;
      out = g_.star(atom);
    } else if (c == '+') {
      ++pos_;
      out = g_.plus(atom);
    } else if (c == '?') {
      ++pos_;
      out = g_.optional(atom);
    } else if (c == '{') {
      ++pos_;
      skip_space();
      SGL_ASSIGN_OR_RETURN(int32_t min, parse_int());
      skip_space();
      int32_t max = min;
      if (peek() == ',') {
        ++pos_;
        skip_space();
        max = kUnbounded;
        if (peek() != '}') {
          SGL_ASSIGN_OR_RETURN(max, parse_int());
          skip_space();
        }
      }
      if (peek() != '}') return error("expected '}' to close the repetition");
      ++pos_;
      if (max != kUnbounded && max < min) {
        return error("repetition {" + std::to_string(min) + "," + std::to_string(max) +
                     "}: the maximum is below the minimum");
      }
      out = g_.repeat(atom, min, max);
    } else {
      return out;
    }
    skip_space();
    if (!at_end() && (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{')) {
      return error("a quantifier cannot follow another; group with ( ) first");
    }
    return out;
  }

  Result<int32_t> parse_int() {
    if (!std::isdigit(static_cast<unsigned char>(peek()))) return error("expected a number");
    int64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      v = v * 10 + (peek() - '0');
      if (v > kMaxRepeatBound) {
        return error("repetition bound above " + std::to_string(kMaxRepeatBound));
      }
      ++pos_;
    }
    return static_cast<int32_t>(v);
  }

  Result<ExprId> parse_atom(int depth) {
    const size_t start = pos_;
    const char c = peek();
    if (c == '"' || c == '\'') return parse_literal(c);
    if (c == '[') return parse_class();
    if (c == '.') {
      ++pos_;
      return g_.char_class({{0, kMaxCodePoint}});
    }
    if (c == '(') {
      ++pos_;
      SGL_ASSIGN_OR_RETURN(ExprId inner, parse_alternatives(depth + 1));
      skip_space();
      if (peek() != ')') return error_at(start, "unclosed '('");
      ++pos_;
      return inner;
    }
    if (is_name_start(c)) {
      std::string_view name = scan_name();
      RuleId rule = g_.add_rule(name);
      note_use(rule, start);
      return g_.ref(rule);
    }
    return error("unexpected character '" + std::string(1, c) + "'");
  }

  void note_use(RuleId rule, size_t pos) {
    if (first_use_.find(rule) == first_use_.end()) first_use_[rule] = pos;
  }

  // One code point of a literal or class (after any escape). `quote`: the closing character.
  Result<uint32_t> parse_char() {
    if (at_end()) return error("unterminated literal or class");
    if (peek() != '\\') {
      size_t p = pos_;
      const int32_t cp = decode_utf8(text_, p);
      if (cp < 0) return error("invalid UTF-8");
      pos_ = p;
      return static_cast<uint32_t>(cp);
    }
    const size_t start = pos_;
    ++pos_;
    if (at_end()) return error("unterminated escape");
    const char e = text_[pos_++];
    switch (e) {
      case 'n':
        return uint32_t{'\n'};
      case 'r':
        return uint32_t{'\r'};
      case 't':
        return uint32_t{'\t'};
      case '0':
        return uint32_t{0};
      case '\\':
      case '"':
      case '\'':
      case '[':
      case ']':
      case '-':
      case '^':
      case '/':
        return static_cast<uint32_t>(e);
      case 'x':
        return parse_hex(start, 2);
      case 'u':
        return parse_hex(start, 4);
      case 'U':
        return parse_hex(start, 8);
      default:
        return error_at(start, "unknown escape '\\" + std::string(1, e) + "'");
    }
  }

  Result<uint32_t> parse_hex(size_t start, int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (at_end() || !std::isxdigit(static_cast<unsigned char>(peek()))) {
        return error_at(start, "escape needs " + std::to_string(digits) + " hex digits");
      }
      const char h = text_[pos_++];
      v = v * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (h | 0x20) - 'a' + 10);
    }
    if (v > kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF)) {
      return error_at(start, "escape is not a Unicode scalar value");
    }
    return v;
  }

  Result<ExprId> parse_literal(char quote) {
    const size_t start = pos_;
    ++pos_;
    std::string bytes;
    while (true) {
      if (at_end() || peek() == '\n') return error_at(start, "unterminated string literal");
      if (peek() == quote) break;
      SGL_ASSIGN_OR_RETURN(uint32_t cp, parse_char());
      append_utf8(bytes, cp);
    }
    ++pos_;
    return g_.bytes(bytes);
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
    while (true) {
      if (at_end()) return error_at(start, "unterminated character class");
      if (peek() == ']') break;
      SGL_ASSIGN_OR_RETURN(uint32_t lo, parse_char());
      uint32_t hi = lo;
      if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        SGL_ASSIGN_OR_RETURN(hi, parse_char());
        if (hi < lo) return error("character class range is reversed");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    return g_.char_class(normalize_ranges(std::move(ranges), false), negated);
  }

  std::string_view text_;
  size_t pos_ = 0;
  Grammar g_;
  std::unordered_map<RuleId, size_t> first_use_;
};

}  // namespace

Result<Grammar> parse_ebnf(std::string_view text, std::string_view root_name) {
  return EbnfParser(text).parse(root_name);
}

}  // namespace sgl::grammar
