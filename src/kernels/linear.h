// Linear layer: y = x @ w^T (+ bias), the GEMM every projection uses.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// x: [T, K] (row stride allowed); w: [N, K] contiguous; bias: [N] or undefined; y: [T, N]
// contiguous. CPU: f32. Accumulation is in f32.
void linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
            backend::Stream stream);

}  // namespace sgl::kernels
