// LoRA: a low-rank update added to a projection's output, y += scaling * (x a^T) b^T, for the
// rows of the requests that use one adapter (model/lora).
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// x: [T, K] (row stride allowed); a: [r, K] and b: [N, r] contiguous f32; shrunk: [T, r]
// contiguous f32 scratch; y: [T, N] of x's dtype (row stride allowed: a projection's column
// range of a wider output). The CPU takes f32 x and y, CUDA f32 or bf16.
void add_lora(const Tensor& x, const Tensor& a, const Tensor& b, float scaling,
              const Tensor& shrunk, const Tensor& y, backend::Stream stream);

}  // namespace sgl::kernels
