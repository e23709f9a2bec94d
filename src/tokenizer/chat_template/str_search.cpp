// Substring search in linear time (glibc memmem), forward and from the end.
#include "tokenizer/chat_template/str_search.h"

#include <string.h>

#include <string>

namespace sgl::tokenizer::jinja {

size_t find_substring(std::string_view hay, std::string_view needle, size_t pos) {
  if (pos > hay.size()) return std::string_view::npos;
  if (needle.empty()) return pos;
  const void* hit = memmem(hay.data() + pos, hay.size() - pos, needle.data(), needle.size());
  if (hit == nullptr) return std::string_view::npos;
  return static_cast<size_t>(static_cast<const char*>(hit) - hay.data());
}

size_t rfind_substring(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return std::string_view::npos;
  if (needle.empty()) return hay.size();
  // The first match in the reversed text is the last one in the text.
  std::string rev_hay(hay.rbegin(), hay.rend());
  std::string rev_needle(needle.rbegin(), needle.rend());
  size_t f = find_substring(rev_hay, rev_needle);
  if (f == std::string_view::npos) return f;
  return hay.size() - f - needle.size();
}

}  // namespace sgl::tokenizer::jinja
