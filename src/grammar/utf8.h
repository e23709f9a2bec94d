// UTF-8 helpers: encoding, decoding, and code point ranges as sequences of byte ranges.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"

namespace sgl::grammar {

struct ByteRange {
  uint8_t lo = 0;
  uint8_t hi = 0;
};

// Appends the UTF-8 encoding of `cp` (cp <= kMaxCodePoint, not a surrogate).
void append_utf8(std::string& out, uint32_t cp);

// Decodes one code point at text[pos]; advances pos. Returns -1 (pos unchanged) on an invalid
// or truncated sequence, an overlong form or a surrogate.
int32_t decode_utf8(std::string_view text, size_t& pos);

// The UTF-8 encodings of the code points in `ranges` (normalized, surrogates skipped) as a list
// of byte-range sequences: a string matches one code point of the set exactly when it matches
// one sequence (each byte within its range). The sequences are disjoint.
std::vector<std::vector<ByteRange>> utf8_sequences(const std::vector<CodePointRange>& ranges);

// A validator of UTF-8 prefixes, a byte at a time: state 0 is "between code points", 1-7 are
// inside one (what the next byte may be), kUtf8Invalid is a sink (no valid continuation).
inline constexpr uint8_t kUtf8Invalid = 8;
inline constexpr int kUtf8States = 9;
uint8_t utf8_next_state(uint8_t state, uint8_t byte);

}  // namespace sgl::grammar
