// PooledEmbedding: one request's embedding gathered over its prefill chunks. The model pools
// each chunk it computes (its last row, or the sum of its rows); the request's embedding is the
// last chunk's last row, or the sum over every chunk divided by the tokens they cover (the whole
// prompt), then L2-normalised when the model's Normalize module says so.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "forward/pooling.h"

namespace sgl::scheduler {

class PooledEmbedding {
 public:
  // A computed chunk of `rows` tokens, in prompt order: `pooled` f32 [hidden] is its last row
  // (kLast) or the sum of its rows (kMean).
  void add_chunk(PoolingType type, std::span<const float> pooled, int32_t rows);
  // Tokens the chunks added cover.
  int64_t rows() const { return rows_; }
  // The embedding, f32 [hidden] (needs a chunk; a kMean request's chunks must cover its whole
  // prompt). Leaves this empty.
  std::vector<float> finish(const PoolerConfig& pooler);

 private:
  std::vector<float> value_;  // f32 [hidden]: the last row, or the running sum
  int64_t rows_ = 0;
};

}  // namespace sgl::scheduler
