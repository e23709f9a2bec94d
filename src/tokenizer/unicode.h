// Unicode helpers for the tokenizer: UTF-8 coding, character classes, normalization forms.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sgl::tokenizer::unicode {

// U+FFFD REPLACEMENT CHARACTER, as UTF-8.
inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

// Byte length of the UTF-8 sequence whose lead byte is `lead` (1 for continuation/invalid bytes).
inline size_t utf8_sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

// Characters in valid UTF-8 text (the bytes that are not continuation bytes).
inline size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Decodes the code point starting at s[pos] and advances pos past it. `s` must be valid UTF-8.
char32_t decode_utf8(std::string_view s, size_t& pos);
// Appends `cp` as UTF-8.
void append_utf8(std::string& out, char32_t cp);

bool is_valid_utf8(std::string_view s);
// Returns `s` with each invalid UTF-8 sequence replaced by U+FFFD, exactly as Rust's
// String::from_utf8_lossy does (one U+FFFD per maximal invalid prefix).
std::string to_valid_utf8_lossy(std::string_view s);

// Character classes, matching Rust's char methods / regex classes used by HF tokenizers.
bool is_whitespace(char32_t c);      // Unicode White_Space (char::is_whitespace, \s)
bool is_numeric(char32_t c);         // Nd | Nl | No (char::is_numeric)
bool is_punctuation(char32_t c);     // ASCII punctuation or a P* category
bool is_word_char(char32_t c);       // \w: letters, marks, Nd, Nl, Pc, ZWJ/ZWNJ
bool is_combining_mark(char32_t c);  // Mn | Mc | Me (unicode-normalization's is_combining_mark)

// Full lowercase mapping (char::to_lowercase, no context-dependent final sigma).
std::string to_lowercase(std::string_view s);

// Unicode normalization forms. Input must be valid UTF-8.
std::string nfc(std::string_view s);
std::string nfd(std::string_view s);
std::string nfkc(std::string_view s);
std::string nfkd(std::string_view s);

}  // namespace sgl::tokenizer::unicode
