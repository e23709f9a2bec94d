// A tokenizer's plain-text tokens by length, as bitmasks.
#include "grammar/plain_token_sets.h"

#include <algorithm>

#include "grammar/utf8.h"

namespace sgl::grammar {

int32_t PlainTokenSets::plain_chars(std::string_view bytes) {
  uint8_t utf8 = 0;
  int32_t chars = 0;
  for (char c : bytes) {
    const auto b = static_cast<uint8_t>(c);
    utf8 = utf8_next_state(utf8, b);
    if (utf8 == kUtf8Invalid || b == '"' || b == '\\' || b < 0x20 || b == 0x7F) return -1;
    if ((b & 0xC0) != 0x80) ++chars;
  }
  return chars;
}

PlainTokenSets::PlainTokenSets(const std::vector<std::string>& tokens,
                               const std::vector<uint8_t>& excluded, int32_t words)
    : words_(words) {
  std::vector<int32_t> chars(tokens.size(), -1);
  int32_t longest = 0;
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (tokens[id].empty() || (id < excluded.size() && excluded[id])) continue;
    chars[id] = plain_chars(tokens[id]);
    longest = std::max(longest, chars[id]);
  }
  // at_most(k) = at_most(k - 1) plus the tokens of exactly k code points.
  bits_.assign(static_cast<size_t>(longest + 1) * words_, 0);
  counts_.assign(longest + 1, 0);
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (chars[id] <= 0) continue;
    bits_[static_cast<size_t>(chars[id]) * words_ + (id >> 5)] |= 1u << (id & 31);
    ++counts_[chars[id]];
  }
  for (int32_t k = 1; k <= longest; ++k) {
    uint32_t* row = bits_.data() + static_cast<size_t>(k) * words_;
    const uint32_t* prev = row - words_;
    for (int32_t w = 0; w < words_; ++w) row[w] |= prev[w];
    counts_[k] += counts_[k - 1];
  }
}

}  // namespace sgl::grammar
