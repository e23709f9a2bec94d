// Per-request row pooling for embedding models: each request's last row, or the f32 sum of its
// rows.
#pragma once

#include <cstdint>

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

enum class RowPool : uint8_t {
  kLast,  // the request's last row
  kSum,   // the sum of the request's rows, accumulated in f32
};

// out[b, :] = the rows [qo_indptr[b], qo_indptr[b + 1]) of src pooled as `pool`, in f32.
// src: [T, H] contiguous, f32 or bf16; qo_indptr: i32 [bs + 1] (every request owns at least one
// row; the CPU checks it, a CUDA kernel writes zeros for an empty one); out: f32 [bs, H]
// contiguous.
void pool_rows(const Tensor& src, const Tensor& qo_indptr, RowPool pool, const Tensor& out,
               backend::Stream stream);

}  // namespace sgl::kernels
