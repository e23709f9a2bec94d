// PCRE2 as the reference for regular languages in the grammar suites: full matches and "is this
// a prefix of some match" (PCRE2_PARTIAL_HARD), with the semantics our regex compiler implements
// (UTF, ASCII classes, `$` only at the very end, LF newlines; our \uXXXX is PCRE2's \x{XXXX}).
#pragma once

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdexcept>
#include <string>

namespace sgl::grammar::test {

class Pcre2Reference {
 public:
  explicit Pcre2Reference(const std::string& pattern) {
    std::string p;
    for (size_t i = 0; i < pattern.size(); ++i) {
      if (pattern[i] == '\\' && i + 1 < pattern.size()) {
        if (pattern[i + 1] == 'u') {
          p += "\\x{" + pattern.substr(i + 2, 4) + "}";
          i += 5;
          continue;
        }
        p += pattern.substr(i, 2);
        ++i;
        continue;
      }
      p += pattern[i];
    }
    pcre2_compile_context* ctx = pcre2_compile_context_create(nullptr);
    pcre2_set_newline(ctx, PCRE2_NEWLINE_LF);
    int err = 0;
    PCRE2_SIZE off = 0;
    const uint32_t options = PCRE2_UTF | PCRE2_ANCHORED | PCRE2_DOLLAR_ENDONLY;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(),
                          options | PCRE2_ENDANCHORED, &err, &off, ctx);
    // Partial matching ignores PCRE2_ENDANCHORED: the end is asserted in the pattern instead
    // (so a match of a proper prefix of the subject does not count).
    const std::string whole = "(?:" + p + ")\\z";
    prefix_code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(whole.data()), whole.size(), options,
                                 &err, &off, ctx);
    pcre2_compile_context_free(ctx);
    if (code_ == nullptr || prefix_code_ == nullptr) throw std::runtime_error("PCRE2 rejects " + p);
    data_ = pcre2_match_data_create_from_pattern(code_, nullptr);
  }
  ~Pcre2Reference() {
    pcre2_match_data_free(data_);
    pcre2_code_free(code_);
    pcre2_code_free(prefix_code_);
  }
  Pcre2Reference(const Pcre2Reference&) = delete;
  Pcre2Reference& operator=(const Pcre2Reference&) = delete;

  bool full_match(const std::string& s) const { return match(code_, s, 0) >= 0; }
  // Some string of the language starts with s (s itself included). `s` must be valid UTF-8
  // (PCRE2 reports an error, here false, otherwise).
  bool is_prefix(const std::string& s) const {
    const int rc = match(prefix_code_, s, PCRE2_PARTIAL_HARD);
    return rc >= 0 || rc == PCRE2_ERROR_PARTIAL;
  }

 private:
  int match(const pcre2_code* code, const std::string& s, uint32_t options) const {
    return pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, options, data_,
                       nullptr);
  }

  pcre2_code* code_ = nullptr;
  pcre2_code* prefix_code_ = nullptr;
  pcre2_match_data* data_ = nullptr;
};

// Whole, valid UTF-8 (what PCRE2 in UTF mode can be asked about).
inline bool valid_utf8(const std::string& s) {
  int n = 0;
  for (unsigned char c : s) {
    if (n > 0) {
      if ((c & 0xC0) != 0x80) return false;
      --n;
    } else if (c >= 0x80) {
      if ((c & 0xE0) == 0xC0 && c >= 0xC2) {
        n = 1;
      } else if ((c & 0xF0) == 0xE0) {
        n = 2;
      } else if ((c & 0xF8) == 0xF0 && c <= 0xF4) {
        n = 3;
      } else {
        return false;
      }
    }
  }
  return n == 0;
}

}  // namespace sgl::grammar::test
