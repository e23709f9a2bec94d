// Jinja lexer implementation (mirrors jinja2.lexer's rules for the default delimiters).
#include "tokenizer/chat_template/lexer.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "tokenizer/chat_template/utf8.h"

namespace sgl::tokenizer::jinja {
namespace {

Status syntax_error(const std::string& message, int line) {
  return invalid_argument("TemplateSyntaxError: " + message + " (line " + std::to_string(line) +
                          ")");
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Length of the (Python \s) whitespace code point at pos, or 0.
size_t space_len(std::string_view s, size_t pos) {
  if (pos >= s.size()) return 0;
  unsigned char c = static_cast<unsigned char>(s[pos]);
  if (c < 0x80) return is_py_space(c) ? 1 : 0;
  size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
  if (pos + len > s.size()) return 0;
  std::u32string cp = utf8_decode(s.substr(pos, len));
  return (cp.size() == 1 && is_py_space(cp[0])) ? len : 0;
}

size_t skip_spaces(std::string_view s, size_t pos) {
  while (size_t n = space_len(s, pos)) pos += n;
  return pos;
}

std::string normalize_newlines(std::string_view source, bool keep_trailing_newline) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!keep_trailing_newline && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  Lexer(std::string source, const LexerOptions& options)
      : src_(std::move(source)), options_(options) {}

  Result<std::vector<Token>> run() {
    while (pos_ < src_.size()) {
      size_t idx = find_tag_start(pos_);
      if (idx == std::string::npos) {
        emit_data(src_.substr(pos_));
        pos_ = src_.size();
        break;
      }
      std::string text = src_.substr(pos_, idx - pos_);
      char kind = src_[idx + 1];
      char sign = (idx + 2 < src_.size() && (src_[idx + 2] == '-' || src_[idx + 2] == '+'))
                      ? src_[idx + 2]
                      : '\0';
      size_t raw_end = kind == '%' ? match_raw_begin(idx) : 0;
      apply_strip(text, sign, kind == '{');
      emit_data(text);
      count_lines(pos_, idx);
      pos_ = idx + 2 + (sign != '\0' ? 1 : 0);
      line_starting_ = false;
      if (raw_end != 0) {
        SGL_RETURN_IF_ERROR(lex_raw(raw_end));
      } else if (kind == '#') {
        SGL_RETURN_IF_ERROR(lex_comment());
      } else {
        SGL_RETURN_IF_ERROR(lex_tag(kind == '%'));
      }
    }
    Token eof;
    eof.type = TokenType::kEof;
    eof.line = line_;
    tokens_.push_back(std::move(eof));
    return std::move(tokens_);
  }

 private:
  size_t find_tag_start(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  void count_lines(size_t from, size_t to) {
    for (size_t i = from; i < to && i < src_.size(); ++i) {
      if (src_[i] == '\n') ++line_;
    }
  }

  // Jinja's OptionalLStrip: `-` strips all trailing whitespace; otherwise lstrip_blocks removes
  // spaces/tabs between the last newline (or the start of a line) and a block/comment tag.
  void apply_strip(std::string& text, char sign, bool is_variable) const {
    if (sign == '-') {
      text = py_strip(text, nullptr, false, true);
    } else if (sign != '+' && options_.lstrip_blocks && !is_variable) {
      size_t nl = text.rfind('\n');
      size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
      if (l_pos > 0 || line_starting_) {
        bool only_blanks = true;
        for (size_t i = l_pos; i < text.size(); ++i) {
          if (text[i] != ' ' && text[i] != '\t') only_blanks = false;
        }
        if (only_blanks) text.resize(l_pos);
      }
    }
  }

  void emit_data(std::string text) {
    if (text.empty()) return;
    Token t;
    t.type = TokenType::kData;
    t.line = line_;
    t.text = std::move(text);
    tokens_.push_back(std::move(t));
  }

  void emit(TokenType type, std::string text = {}) {
    Token t;
    t.type = type;
    t.line = line_;
    t.text = std::move(text);
    tokens_.push_back(std::move(t));
  }

  // Returns the end of `{%[-+]? raw (-%}\s*|%})` at idx, or 0 when it is not a raw tag.
  size_t match_raw_begin(size_t idx) const {
    size_t p = idx + 2;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    p = skip_spaces(src_, p);
    if (src_.compare(p, 3, "raw") != 0) return 0;
    p = skip_spaces(src_, p + 3);
    if (src_.compare(p, 3, "-%}") == 0) return skip_spaces(src_, p + 3);
    if (src_.compare(p, 2, "%}") == 0) return p + 2;
    return 0;
  }

  // Matches `{%[-+]? endraw <block end>` at p; returns its end, the sign and the end's start.
  bool match_endraw(size_t p, size_t* end, char* sign) const {
    if (src_.compare(p, 2, "{%") != 0) return false;
    size_t q = p + 2;
    *sign = '\0';
    if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) *sign = src_[q++];
    q = skip_spaces(src_, q);
    if (src_.compare(q, 6, "endraw") != 0) return false;
    q = skip_spaces(src_, q + 6);
    return match_block_end(q, end);
  }

  // Block end rule: `+%}` | `-%}\s*` | `%}\n?` (the newline only with trim_blocks).
  bool match_block_end(size_t q, size_t* end) const {
    if (src_.compare(q, 3, "+%}") == 0) {
      *end = q + 3;
    } else if (src_.compare(q, 3, "-%}") == 0) {
      *end = skip_spaces(src_, q + 3);
    } else if (src_.compare(q, 2, "%}") == 0) {
      *end = q + 2;
      if (options_.trim_blocks && *end < src_.size() && src_[*end] == '\n') ++*end;
    } else {
      return false;
    }
    return true;
  }

  Status lex_raw(size_t raw_end) {
    count_lines(pos_, raw_end);
    line_starting_ = raw_end > 0 && src_[raw_end - 1] == '\n';
    pos_ = raw_end;
    for (size_t p = src_.find("{%", pos_); p != std::string::npos; p = src_.find("{%", p + 1)) {
      size_t end = 0;
      char sign = '\0';
      if (!match_endraw(p, &end, &sign)) continue;
      std::string text = src_.substr(pos_, p - pos_);
      apply_strip(text, sign, false);
      emit_data(std::move(text));
      count_lines(pos_, end);
      line_starting_ = src_[end - 1] == '\n';
      pos_ = end;
      return Status::ok_status();
    }
    return syntax_error("Missing end of raw directive", line_);
  }

  Status lex_comment() {
    for (size_t p = pos_; p + 1 < src_.size(); ++p) {
      size_t end = 0;
      if (src_.compare(p, 3, "+#}") == 0) {
        end = p + 3;
      } else if (src_.compare(p, 3, "-#}") == 0) {
        end = skip_spaces(src_, p + 3);
      } else if (src_.compare(p, 2, "#}") == 0) {
        end = p + 2;
        if (options_.trim_blocks && end < src_.size() && src_[end] == '\n') ++end;
      } else {
        continue;
      }
      count_lines(pos_, end);
      line_starting_ = src_[end - 1] == '\n';
      pos_ = end;
      return Status::ok_status();
    }
    return syntax_error("Missing end of comment tag", line_);
  }

  Status lex_tag(bool is_block) {
    emit(is_block ? TokenType::kBlockBegin : TokenType::kVariableBegin);
    std::string balancing;
    while (true) {
      if (pos_ >= src_.size()) {
        return syntax_error(is_block ? "unexpected end of template, expected end of block"
                                     : "unexpected end of template, expected end of print",
                            line_);
      }
      if (balancing.empty()) {
        size_t end = 0;
        bool matched = false;
        if (is_block) {
          matched = match_block_end(pos_, &end);
        } else if (src_.compare(pos_, 3, "-}}") == 0) {
          end = skip_spaces(src_, pos_ + 3);
          matched = true;
        } else if (src_.compare(pos_, 2, "}}") == 0) {
          end = pos_ + 2;
          matched = true;
        }
        if (matched) {
          emit(is_block ? TokenType::kBlockEnd : TokenType::kVariableEnd);
          count_lines(pos_, end);
          line_starting_ = src_[end - 1] == '\n';
          pos_ = end;
          return Status::ok_status();
        }
      }
      if (size_t n = space_len(src_, pos_)) {
        if (src_[pos_] == '\n') ++line_;
        pos_ += n;
        continue;
      }
      char c = src_[pos_];
      if (is_digit(c)) {
        SGL_RETURN_IF_ERROR(lex_number());
        continue;
      }
      if (is_name_start(c)) {
        size_t b = pos_;
        while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
        emit(TokenType::kName, src_.substr(b, pos_ - b));
        continue;
      }
      if (c == '\'' || c == '"') {
        SGL_RETURN_IF_ERROR(lex_string(c));
        continue;
      }
      SGL_RETURN_IF_ERROR(lex_operator(balancing));
    }
  }

  // Digits with optional `_` separators; returns the end position (pos when no digit).
  size_t scan_digits(size_t p) const {
    if (p >= src_.size() || !is_digit(src_[p])) return p;
    while (p < src_.size() && (is_digit(src_[p]) ||
                               (src_[p] == '_' && p + 1 < src_.size() && is_digit(src_[p + 1])))) {
      ++p;
    }
    return p;
  }

  static std::string strip_underscores(std::string_view s) {
    std::string out;
    for (char c : s) {
      if (c != '_') out.push_back(c);
    }
    return out;
  }

  Status lex_number() {
    size_t b = pos_;
    // Float: digits ( (.digits)? e[+-]?digits | .digits ), not preceded by '.'.
    bool after_dot = b > 0 && src_[b - 1] == '.';
    size_t p = scan_digits(b);
    size_t float_end = 0;
    if (!after_dot) {
      size_t q = p;
      if (q < src_.size() && src_[q] == '.' && scan_digits(q + 1) > q + 1) q = scan_digits(q + 1);
      size_t e = q;
      if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
        size_t f = e + 1;
        if (f < src_.size() && (src_[f] == '+' || src_[f] == '-')) ++f;
        size_t g = scan_digits(f);
        if (g > f) e = g;
      }
      if (e > q || q > p) float_end = e > q ? e : q;
    }
    if (float_end != 0) {
      std::string text = strip_underscores(std::string_view(src_).substr(b, float_end - b));
      Token t;
      t.type = TokenType::kFloat;
      t.line = line_;
      t.float_value = std::strtod(text.c_str(), nullptr);
      t.text = std::move(text);
      tokens_.push_back(std::move(t));
      pos_ = float_end;
      return Status::ok_status();
    }
    // Integer: 0x / 0o / 0b prefixes or decimal.
    int base = 10;
    size_t digits_begin = b;
    if (src_[b] == '0' && b + 1 < src_.size()) {
      char x = src_[b + 1];
      if (x == 'x' || x == 'X') base = 16;
      if (x == 'o' || x == 'O') base = 8;
      if (x == 'b' || x == 'B') base = 2;
    }
    size_t end = p;
    if (base != 10) {
      digits_begin = b + 2;
      end = digits_begin;
      while (end < src_.size() &&
             (std::isxdigit(static_cast<unsigned char>(src_[end])) || src_[end] == '_')) {
        ++end;
      }
    }
    std::string digits =
        strip_underscores(std::string_view(src_).substr(digits_begin, end - digits_begin));
    errno = 0;
    char* parse_end = nullptr;
    long long v = std::strtoll(digits.c_str(), &parse_end, base);
    if (errno == ERANGE || digits.empty() || *parse_end != '\0') {
      return syntax_error("invalid or out of range integer literal '" + digits + "'", line_);
    }
    Token t;
    t.type = TokenType::kInteger;
    t.line = line_;
    t.int_value = v;
    t.text = src_.substr(b, end - b);
    tokens_.push_back(std::move(t));
    pos_ = end;
    return Status::ok_status();
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  Status lex_string(char quote) {
    int start_line = line_;
    size_t p = pos_ + 1;
    std::string value;
    while (true) {
      if (p >= src_.size()) return syntax_error("unexpected end of string", start_line);
      char c = src_[p];
      if (c == quote) break;
      if (c == '\n') ++line_;
      if (c != '\\') {
        value.push_back(c);
        ++p;
        continue;
      }
      if (p + 1 >= src_.size()) return syntax_error("unexpected end of string", start_line);
      char e = src_[p + 1];
      p += 2;
      switch (e) {
        case '\n':
          ++line_;
          break;  // line continuation
        case '\\':
          value.push_back('\\');
          break;
        case '\'':
          value.push_back('\'');
          break;
        case '"':
          value.push_back('"');
          break;
        case 'a':
          value.push_back('\a');
          break;
        case 'b':
          value.push_back('\b');
          break;
        case 'f':
          value.push_back('\f');
          break;
        case 'n':
          value.push_back('\n');
          break;
        case 'r':
          value.push_back('\r');
          break;
        case 't':
          value.push_back('\t');
          break;
        case 'v':
          value.push_back('\v');
          break;
        case 'x':
        case 'u':
        case 'U': {
          int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          char32_t cp = 0;
          for (int k = 0; k < n; ++k) {
            int h = p + k < src_.size() ? hex_value(src_[p + k]) : -1;
            if (h < 0) return syntax_error("truncated \\" + std::string(1, e) + " escape", line_);
            cp = cp * 16 + static_cast<char32_t>(h);
          }
          if (cp > 0x10FFFF) return syntax_error("illegal Unicode character", line_);
          p += static_cast<size_t>(n);
          append_utf8(value, cp);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            char32_t cp = static_cast<char32_t>(e - '0');
            for (int k = 0; k < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++k) {
              cp = cp * 8 + static_cast<char32_t>(src_[p++] - '0');
            }
            append_utf8(value, cp);
          } else {
            // Python keeps unknown escapes verbatim.
            value.push_back('\\');
            value.push_back(e);
          }
      }
    }
    Token t;
    t.type = TokenType::kString;
    t.line = start_line;
    t.text = std::move(value);
    tokens_.push_back(std::move(t));
    pos_ = p + 1;
    return Status::ok_status();
  }

  Status lex_operator(std::string& balancing) {
    static const char* kTwoChar[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : kTwoChar) {
      if (src_.compare(pos_, 2, op) == 0) {
        emit(TokenType::kOperator, op);
        pos_ += 2;
        return Status::ok_status();
      }
    }
    char c = src_[pos_];
    static const std::string kSingle = "+-/*%~[](){}><=.:|,;";
    if (kSingle.find(c) == std::string::npos) {
      return syntax_error(std::string("unexpected char '") + c + "'", line_);
    }
    if (c == '(' || c == '[' || c == '{') {
      balancing.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (balancing.empty()) return syntax_error(std::string("unexpected '") + c + "'", line_);
      char expected = balancing.back();
      balancing.pop_back();
      if (expected != c) {
        return syntax_error(std::string("unexpected '") + c + "', expected '" + expected + "'",
                            line_);
      }
    }
    emit(TokenType::kOperator, std::string(1, c));
    ++pos_;
    return Status::ok_status();
  }

  std::string src_;
  LexerOptions options_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

Result<std::vector<Token>> tokenize(std::string_view source, const LexerOptions& options) {
  Lexer lexer(normalize_newlines(source, options.keep_trailing_newline), options);
  return lexer.run();
}

}  // namespace sgl::tokenizer::jinja
