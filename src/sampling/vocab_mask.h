// VocabMask: the grammar token masks of one batch (structured output). The scheduler computes
// them from each constrained request's grammar matcher once every token before the batch is
// known; in the overlap loop that is after the batch was launched, so a batch carries a
// VocabMaskFuture and the runner waits for it only just before sampling — the forward runs
// while the host computes the masks (SGLang overlaps them the same way).
#pragma once

#include <cstdint>
#include <future>
#include <vector>

#include "core/tensor.h"

namespace sgl::sampling {

struct VocabMask {
  int32_t words = 0;  // bitmask words per row: ceil(vocab / 32)
  // [n]: the masked sampled rows of the batch (a request's one, or a verify's 1 + drafts, in
  // request order), each a logits row of the sampler.
  std::vector<int32_t> rows;
  // u32 [n, words]: bit t % 32 of word t / 32 of row i set = token t allowed for rows[i].
  std::vector<uint32_t> bits;

  bool empty() const { return rows.empty(); }
  bool allows(size_t i, int64_t token) const {
    return (bits[i * words + static_cast<size_t>(token / 32)] >> (token % 32)) & 1u;
  }
};

using VocabMaskFuture = std::shared_future<VocabMask>;

// Sets the disallowed tokens' logits of the masked rows to -inf. logits: host f32 [bs, vocab];
// vocab <= mask.words * 32.
void apply_vocab_mask(const Tensor& logits, const VocabMask& mask);

}  // namespace sgl::sampling
