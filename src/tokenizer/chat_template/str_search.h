// Substring search in linear time, forward and from the end.
#pragma once

#include <cstddef>
#include <string_view>

namespace sgl::tokenizer::jinja {

// NOTE: std::string::find compares the needle at every position: O(len(hay) * len(needle)),
// hours for two long strings a template builds. These are linear (glibc's memmem runs the
// two-way algorithm on long needles).

// Start of the first occurrence of `needle` in `hay` at or after `pos`, or npos.
size_t find_substring(std::string_view hay, std::string_view needle, size_t pos = 0);
// Start of the last occurrence of `needle` in `hay`, or npos.
size_t rfind_substring(std::string_view hay, std::string_view needle);

}  // namespace sgl::tokenizer::jinja
