// DraftTopK: each row's k most likely draft tokens with their log-softmax values (log-prob
// descending, ties to the lower id: speculative::top_k_logprobs' order), as EAGLE trees branch.
// On a GPU the device sampler's top logprobs over greedy rows, queued on the stream and
// graph-capturable, so only rows x k entries ever reach the host (32 rows of a 128k vocabulary
// are 16 MB); on the CPU top_k_logprobs over each row.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/buffer.h"
#include "core/tensor.h"
#include "runner/model_runner.h"
#include "speculative/draft_tree.h"

namespace sgl::runner {

class DraftTopK {
 public:
  // For up to max_rows rows of logits on `target`'s device.
  DraftTopK(ModelRunner& target, int32_t k, int64_t max_rows);

  int32_t k() const { return k_; }
  int64_t max_rows() const { return max_rows_; }
  // ids i32 [rows, k] (draft vocabulary ids) and logprobs f32 [rows, k] of logits [rows, vocab],
  // on the target's stream.
  void run(const Tensor& logits, const Tensor& ids, const Tensor& logprobs);
  // The same on the host, each id mapped by `to_target` (EAGLE-3's map; empty: none): [rows][k].
  // Waits.
  std::vector<std::vector<speculative::TokenLogprob>> host(const Tensor& logits,
                                                           std::span<const int32_t> to_target);

 private:
  ModelRunner& target_;
  int32_t k_;
  int64_t max_rows_;
  Buffer params_;    // GPU: the sampler's parameters for max_rows greedy rows
  Buffer next_;      // GPU: i32 [max_rows], the sampler's greedy ids (unused)
  Buffer ids_;       // host(): i32 [max_rows, k]
  Buffer logprobs_;  // host(): f32 [max_rows, k]
};

}  // namespace sgl::runner
