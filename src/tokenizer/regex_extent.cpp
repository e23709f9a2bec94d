// max_match_extent: a recursive-descent walk over the pattern that bounds each piece's bytes.
#include "tokenizer/regex_extent.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string_view>

#include "tokenizer/unicode.h"

namespace sgl::tokenizer {
namespace {

constexpr size_t kCharBytes = 4;     // one code point in UTF-8, at most
constexpr size_t kAnchorPeek = 8;    // what $, \b and \Z look at: a character and a final newline
constexpr size_t kLimit = 1u << 20;  // past this the bound is of no use: treated as unbounded

// A piece of pattern: the most bytes it matches, and the most it examines from where it starts
// (a lookahead examines without matching).
struct Span {
  size_t len = 0;
  size_t ext = 0;
};

Span repeat(Span s, size_t times) {
  if (times == 0) return {};
  return {s.len * times, s.len * (times - 1) + s.ext};
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

class ExtentParser {
 public:
  explicit ExtentParser(std::string_view pattern) : p_(pattern) {}

  std::optional<size_t> run() {
    const std::optional<Span> s = alternation();
    if (!s || i_ != p_.size()) return std::nullopt;  // an unmatched ')'
    return s->ext;
  }

 private:
  bool at(char c) const { return i_ < p_.size() && p_[i_] == c; }

  std::optional<Span> alternation() {
    Span best;
    while (true) {
      const std::optional<Span> s = sequence();
      if (!s) return std::nullopt;
      best = {std::max(best.len, s->len), std::max(best.ext, s->ext)};
      if (!at('|')) return best;
      ++i_;
    }
  }

  std::optional<Span> sequence() {
    Span total;
    while (i_ < p_.size() && !at('|') && !at(')')) {
      const std::optional<Span> a = atom();
      if (!a) return std::nullopt;
      const std::optional<size_t> times = quantifier();
      if (!times) return std::nullopt;
      const Span r = repeat(*a, *times);
      total.ext = std::max(total.ext, total.len + r.ext);
      total.len += r.len;
      if (total.ext > kLimit) return std::nullopt;
    }
    return total;
  }

  // The most repetitions of the atom just read: 1 without a quantifier, nullopt when unbounded
  // or not a plain {n} / {n,m} (PCRE2 versions differ on {,m} and on braces with spaces).
  std::optional<size_t> quantifier() {
    size_t times = 1;
    if (at('*') || at('+')) return std::nullopt;
    if (at('?')) {
      ++i_;
    } else if (at('{')) {
      ++i_;
      const std::optional<size_t> low = number();
      if (!low) return std::nullopt;
      times = *low;
      if (at(',')) {
        ++i_;
        const std::optional<size_t> high = number();
        if (!high) return std::nullopt;  // {n,}: unbounded
        times = *high;
      }
      if (!at('}')) return std::nullopt;
      ++i_;
    } else {
      return 1;
    }
    if (at('?') || at('+')) ++i_;  // lazy or possessive
    return times;
  }

  std::optional<size_t> number() {
    size_t value = 0, digits = 0;
    while (i_ < p_.size() && is_digit(p_[i_]) && digits < 9) {
      value = value * 10 + static_cast<size_t>(p_[i_++] - '0');
      ++digits;
    }
    if (digits == 0 || (i_ < p_.size() && is_digit(p_[i_]))) return std::nullopt;
    return value;
  }

  std::optional<Span> atom() {
    switch (p_[i_]) {
      case '(':
        return group();
      case '[':
        return char_class();
      case '\\':
        return escape();
      case '^':
        ++i_;
        return Span{};
      case '$':
        ++i_;
        return Span{0, kAnchorPeek};
      case '*':
      case '+':
      case '?':
      case '{':  // a quantifier with nothing to repeat, or a brace PCRE2 may read either way
        return std::nullopt;
      default:  // '.' or a literal character
        i_ += unicode::utf8_sequence_length(static_cast<unsigned char>(p_[i_]));
        return Span{kCharBytes, kCharBytes};
    }
  }

  // After "(": capturing, named, non-capturing and atomic groups hold their content's span; a
  // lookaround examines its content without matching it. A lookbehind's content starts at or
  // before the position, so its reach from the position is at most the content's own (which may
  // hold a lookahead or $ that reads past the position).
  std::optional<Span> group() {
    ++i_;
    if (!at('?')) return group_body();
    ++i_;
    if (at(':') || at('>')) {
      ++i_;
      return group_body();
    }
    if (at('=') || at('!')) {
      ++i_;
      const std::optional<Span> inner = group_body();
      if (!inner) return std::nullopt;
      return Span{0, inner->ext};
    }
    if (at('<') && i_ + 1 < p_.size() && (p_[i_ + 1] == '=' || p_[i_ + 1] == '!')) {
      i_ += 2;
      const std::optional<Span> inner = group_body();
      if (!inner) return std::nullopt;
      return Span{0, inner->ext};
    }
    if (at('P') && i_ + 1 < p_.size() && p_[i_ + 1] == '<') ++i_;  // (?P<name>
    if (at('<')) {                                                 // (?<name>
      ++i_;
      while (i_ < p_.size() && is_word_char(p_[i_])) ++i_;
      if (!at('>')) return std::nullopt;
      ++i_;
      return group_body();
    }
    if (at('#')) {  // a comment runs to the first ')'
      while (i_ < p_.size() && !at(')')) ++i_;
      if (!at(')')) return std::nullopt;
      ++i_;
      return nothing_to_repeat();
    }
    // Inline flags, global "(?im)" or scoped "(?i-s:...)"; verbose mode (x) changes what every
    // character means, so it is not analysed.
    while (i_ < p_.size() && std::string_view("aiLmsu-").find(p_[i_]) != std::string_view::npos) {
      ++i_;
    }
    if (at(')')) {
      ++i_;
      return nothing_to_repeat();
    }
    if (at(':')) {
      ++i_;
      return group_body();
    }
    return std::nullopt;  // backreferences, conditionals, recursion, (?x), PCRE2-only forms
  }

  // A comment or a global flag group matches nothing, but a quantifier after it repeats the atom
  // before it (PCRE2 and Python drop the group first): not analysed.
  std::optional<Span> nothing_to_repeat() const {
    if (at('*') || at('+') || at('?') || at('{')) return std::nullopt;
    return Span{};
  }

  std::optional<Span> group_body() {
    const std::optional<Span> inner = alternation();
    if (!inner || !at(')')) return std::nullopt;
    ++i_;
    return inner;
  }

  // One character of a set; the set's end is found as PCRE2 finds it (a leading ']' is a member).
  std::optional<Span> char_class() {
    ++i_;
    if (at('^')) ++i_;
    if (at(']')) ++i_;
    while (i_ < p_.size() && !at(']')) {
      if (at('\\')) {
        if (i_ + 1 < p_.size() && p_[i_ + 1] == 'Q') return std::nullopt;  // \Q..\E quoting
        i_ += 2;
        continue;
      }
      // POSIX classes ([:alpha:]) end where PCRE2 and Python disagree.
      if (at('[') && i_ + 1 < p_.size() &&
          std::string_view(":.=").find(p_[i_ + 1]) != std::string_view::npos) {
        return std::nullopt;
      }
      ++i_;
    }
    if (!at(']')) return std::nullopt;
    ++i_;
    return Span{kCharBytes, kCharBytes};
  }

  std::optional<Span> escape() {
    if (i_ + 1 >= p_.size()) return std::nullopt;
    const char e = p_[i_ + 1];
    i_ += 2;
    const Span one{kCharBytes, kCharBytes};
    if (e == 'b' || e == 'B' || e == 'Z' || e == 'z') return Span{0, kAnchorPeek};
    if (e == 'A') return Span{};
    if (std::string_view("dDwWsSntrfvae").find(e) != std::string_view::npos) return one;
    if (e == 'x') {  // \xhh or PCRE2's \x{h..}
      if (at('{')) {
        while (i_ < p_.size() && !at('}')) ++i_;
        if (!at('}')) return std::nullopt;
        ++i_;
        return one;
      }
      for (int k = 0; k < 2 && i_ < p_.size() && std::isxdigit(static_cast<unsigned char>(p_[i_]));
           ++k) {
        ++i_;
      }
      return one;
    }
    if (e == '0') {  // an octal escape
      for (int k = 0; k < 2 && i_ < p_.size() && p_[i_] >= '0' && p_[i_] <= '7'; ++k) ++i_;
      return one;
    }
    // Escaped punctuation is the character itself; digits are backreferences and other letters
    // are escapes not analysed here.
    const auto u = static_cast<unsigned char>(e);
    if (u < 0x80 && !is_word_char(e)) return one;
    return std::nullopt;
  }

  std::string_view p_;
  size_t i_ = 0;
};

}  // namespace

std::optional<size_t> max_match_extent(std::string_view pattern) {
  return ExtentParser(pattern).run();
}

}  // namespace sgl::tokenizer
