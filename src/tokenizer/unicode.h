// Unicode helpers for the tokenizer: UTF-8 coding, character classes, normalization forms.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/utf8.h"

namespace sgl::tokenizer::unicode {

// U+FFFD REPLACEMENT CHARACTER, as UTF-8.
inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

using sgl::append_utf8;
using sgl::utf8_length;
using sgl::utf8_sequence_length;

// Decodes the code point starting at s[pos] and advances pos past it. `s` must be valid UTF-8.
char32_t decode_utf8(std::string_view s, size_t& pos);

bool is_valid_utf8(std::string_view s);

// Byte length of the whitespace (is_whitespace) that starts `s`; byte offset where the
// whitespace that ends `s` starts. `s` must be valid UTF-8.
size_t leading_whitespace_length(std::string_view s);
size_t trailing_whitespace_begin(std::string_view s);
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
