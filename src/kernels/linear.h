// Linear layer: y = x @ w^T (+ bias), the GEMM every projection uses.
#pragma once

#include <string_view>

#include "backend/stream.h"
#include "core/status.h"
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

// Which GEMM the linear layers on `stream` use for decode-sized batches (--linear-backend):
// "auto" (our small-batch kernel up to 16 tokens, cuBLASLt above: the fastest measured) or, on
// CUDA, "hopper" (our Hopper GEMM, kernels/cuda/hopper_gemm.h, for 17-256 tokens on compute
// capability 9.0). Set before the stream's first forward pass; a per-stream setting, so CUDA
// graphs capture whichever was chosen.
Status set_linear_backend(backend::Stream stream, std::string_view name);

}  // namespace sgl::kernels
