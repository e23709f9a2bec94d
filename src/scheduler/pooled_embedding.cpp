// PooledEmbedding: chunk accumulation, mean and L2 normalisation.
#include "scheduler/pooled_embedding.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace sgl::scheduler {

void PooledEmbedding::add_chunk(PoolingType type, std::span<const float> pooled, int32_t rows) {
  SGL_CHECK(type != PoolingType::kNone && rows > 0 && !pooled.empty());
  SGL_CHECK(value_.empty() || value_.size() == pooled.size()) << "chunks of different widths";
  if (type == PoolingType::kLast || value_.empty()) {
    value_.assign(pooled.begin(), pooled.end());
  } else {
    for (size_t i = 0; i < value_.size(); ++i) value_[i] += pooled[i];
  }
  rows_ += rows;
}

std::vector<float> PooledEmbedding::finish(const PoolerConfig& pooler) {
  SGL_CHECK(rows_ > 0) << "an embedding with no computed tokens";
  std::vector<float> out = std::move(value_);
  value_.clear();
  if (pooler.type == PoolingType::kMean) {
    const auto n = static_cast<float>(rows_);
    for (float& v : out) v /= n;
  }
  rows_ = 0;
  if (pooler.normalize) {
    double sq = 0;
    for (float v : out) sq += static_cast<double>(v) * v;
    // torch.nn.functional.normalize's eps: a zero vector stays zero.
    const double norm = std::max(std::sqrt(sq), 1e-12);
    for (float& v : out) v = static_cast<float>(v / norm);
  }
  return out;
}

}  // namespace sgl::scheduler
