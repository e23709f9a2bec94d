// Small-batch linear layers on tensor cores, for decode: y[m, n] = x[m, k] w[n, k]^T with
// m <= 16. Memory-bound (every weight byte is read once per step), so the kernel is built to
// stream the weight at the machine's bandwidth; cuBLAS takes larger m.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels::cuda {

inline constexpr int64_t kGemvMaxTokens = 16;
// Weight rows a block of gemv (not the fused gate/up) computes: its grid is n / this, rounded up.
inline constexpr int64_t kGemvRowsPerBlock = 16;

// Whether gemv takes this x / w: bf16, m <= kGemvMaxTokens, k % 8 == 0, 16-byte aligned rows.
bool gemv_applies(const Tensor& x, const Tensor& w);

// x: [m, k] bf16 (row stride allowed); w: [n, k] bf16; bias: [n] bf16 or undefined;
// y: [m, n] bf16 or f32, contiguous.
void gemv(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
          backend::Stream stream);

// The MLP's gate/up projection and activation in one pass: w = [gate; up]: [2I, k];
// out: [m, I] bf16 = silu(x gate^T) * (x up^T), rounded as the unfused ops round.
void gemv_silu_and_mul(const Tensor& x, const Tensor& w, const Tensor& out, backend::Stream stream);

}  // namespace sgl::kernels::cuda
