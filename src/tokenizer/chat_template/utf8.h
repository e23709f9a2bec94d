// UTF-8 helpers for the Jinja interpreter: code point iteration and Python-like str predicates.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/utf8.h"

namespace sgl::tokenizer::jinja {

// Decodes UTF-8 into code points; invalid bytes decode as U+FFFD one byte at a time.
std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);
using sgl::append_utf8;
using sgl::utf8_length;  // Python's len(str)

bool is_ascii(std::string_view s);

// Python's str.isspace() for one code point.
bool is_py_space(char32_t cp);
// Python's str.isalnum()/isalpha()/isdigit() for one code point (ASCII plus Latin, Greek and
// Cyrillic letters; other scripts count as alphanumeric when they are not space/punctuation).
bool is_py_alpha(char32_t cp);
bool is_py_digit(char32_t cp);
bool is_py_word(char32_t cp);  // regex \w
bool is_py_lower(char32_t cp);
bool is_py_upper(char32_t cp);

// Simple one-to-one case mapping (ASCII, Latin-1, Latin Extended-A, Greek, Cyrillic).
char32_t to_upper_cp(char32_t cp);
char32_t to_lower_cp(char32_t cp);

std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_title(std::string_view s);
std::string py_capitalize(std::string_view s);

// str.strip()/lstrip()/rstrip(): with chars == nullptr strips Python whitespace.
std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right);

}  // namespace sgl::tokenizer::jinja
