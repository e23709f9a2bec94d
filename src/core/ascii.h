// ASCII case folding for protocol and flag words (header names, auth schemes, log levels).
// Unicode text is folded by tokenizer/unicode.h instead.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace sgl {

inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Whether s, ASCII-lowercased, is `lower` (without a copy of s, which may be long).
inline bool ascii_lowers_to(std::string_view s, std::string_view lower) {
  return s.size() == lower.size() &&
         std::equal(s.begin(), s.end(), lower.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == b;
         });
}

}  // namespace sgl
