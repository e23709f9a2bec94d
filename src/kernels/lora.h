// LoRA: a low-rank update added to a projection's output, y += scaling * (x a^T) b^T, for the
// rows of the requests that use one adapter (model/lora).
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// x: [T, K] (row stride allowed); a: [r, K] and b: [N, r] contiguous; shrunk: [T, r] contiguous
// scratch; y: [T, N] (row stride allowed: a projection's column range of a wider output).
// CPU only so far (f32); a CUDA tensor is a programming error (sgl-server refuses LoRA there).
void add_lora(const Tensor& x, const Tensor& a, const Tensor& b, float scaling,
              const Tensor& shrunk, const Tensor& y, backend::Stream stream);

}  // namespace sgl::kernels
