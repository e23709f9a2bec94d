// Per tokenizer: its tokens of plain text (printable ASCII but `"` and `\`, valid UTF-8 whose
// last code point may be cut) by their number of code points, as one bitmask per k of "every
// such token of at most k code points". A mask position inside a string whose plain run
// (PlainRuns) is r accepts exactly the tokens of at_most(r) among the plain ones: its mask
// starts as a copy of that bitmask instead of ~120k token ids pushed one by one.
//
// Built once with the TokenizerInfo and immutable afterwards: shared by every grammar over the
// tokenizer and by every thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sgl::grammar {

class PlainTokenSets {
 public:
  // `tokens[id]` are the token's bytes; ids in `excluded` (stop, special, empty) are left out.
  // `words`: the bitmasks' width in 32-bit words (covers every id).
  PlainTokenSets(const std::vector<std::string>& tokens, const std::vector<uint8_t>& excluded,
                 int32_t words);

  // The code points of `bytes` (a cut last one counts) when they are plain text; -1 otherwise.
  static int32_t plain_chars(std::string_view bytes);

  // The most code points of a plain token (0: none).
  int32_t longest() const { return static_cast<int32_t>(counts_.size()) - 1; }
  // The plain tokens of at most k code points (0 <= k <= longest()).
  std::span<const uint32_t> at_most(int32_t k) const {
    return {bits_.data() + static_cast<size_t>(k) * words_, static_cast<size_t>(words_)};
  }
  int32_t count_at_most(int32_t k) const { return counts_[k]; }

 private:
  int32_t words_ = 0;
  std::vector<uint32_t> bits_;   // (longest + 1) bitmasks of words_ words
  std::vector<int32_t> counts_;  // per k: tokens in at_most(k)
};

}  // namespace sgl::grammar
