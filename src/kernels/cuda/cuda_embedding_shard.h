// CUDA launcher of kernels::embedding_shard (a tensor-parallel rank's part of the embedding
// lookup); arguments already validated.
#pragma once

#include <cstdint>

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels::cuda {

void embedding_shard(const Tensor& ids, const Tensor& table, int64_t vocab_start,
                     int64_t vocab_size, const Tensor& out, backend::Stream stream);

}  // namespace sgl::kernels::cuda
