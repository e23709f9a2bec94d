// Linear layer: y = x @ w^T (+ bias), the GEMM every projection uses.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// x: [T, K] (row stride allowed); w: [N, K] contiguous; bias: [N] or undefined; y: [T, N]
// contiguous. CPU: f32. Accumulation is in f32.
void linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
            backend::Stream stream);

// The MLP's gate/up projection and its activation: out[T, I] = silu(x gate^T) * (x up^T), with
// w_gate_up: [2I, K] = [gate; up]. gate_up: [T, 2I] scratch for backends that run the two
// steps apart (CUDA fuses them for decode-sized T and leaves it untouched).
void linear_silu_and_mul(const Tensor& x, const Tensor& w_gate_up, const Tensor& gate_up,
                         const Tensor& out, backend::Stream stream);

}  // namespace sgl::kernels
