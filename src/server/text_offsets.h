// OpenAI's text_offset (/v1/completions logprobs): where each token's text starts in the
// choice's text, in characters. Counted on the text the ids decode to, not on the tokens' own
// texts, whose lengths drift from it: a special token the text leaves out, a character spread
// over byte tokens (each listed as U+FFFD), the leading space a text's first word drops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "tokenizer/incremental_detokenizer.h"

namespace sgl::server {

class TextOffsets {
 public:
  // `context`: ids decoded before the first (their text is not counted); `start`: the first
  // token's offset; offsets never pass `limit` (the end of an echoed prompt, whose text need
  // not be what its ids decode to). Borrows `tokenizer`.
  TextOffsets(const tokenizer::Tokenizer& tokenizer, const std::vector<int32_t>& context,
              tokenizer::DecodeOptions options, size_t start,
              size_t limit = std::numeric_limits<size_t>::max());

  // The offset of `id`'s text (where the text stood when it came: a character completed by a
  // later byte token starts at its first byte's offset); then counts that text.
  size_t next(int32_t id);

 private:
  tokenizer::IncrementalDetokenizer detok_;
  size_t offset_;
  size_t limit_;
};

}  // namespace sgl::server
