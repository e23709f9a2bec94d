// Small-batch linear layers on tensor cores, for decode: y[m, n] = x[m, k] w[n, k]^T with
// m <= 16. Memory-bound (every weight byte is read once per step), so the kernel is built to
// stream the weight at the machine's bandwidth; cuBLAS takes larger m.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"
#include "kernels/norm_linear.h"

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

// The residual add + RMSNorm folded into the two above (kernels/norm_linear.h) for rows of up to
// this many values, and up to kGemvFoldNormMaxValues over all rows: every block adds and
// normalizes the rows into shared memory itself (a thread per 8 values, the rows in one or two
// passes), with fused_add_rms_norm's arithmetic and bits. The prologue grows with the rows and
// the norm kernel's hop it saves does not: decode steps of 2 to 4 tokens of 576 values got 7-11%
// faster, of 5 and 6 tokens none, 2 tokens of 2048 slower, and a 5-token verify pass 8% slower
// (docs/perf-log/2026-12-02-folded-norm-rows.md).
inline constexpr int64_t kGemvFoldNormMaxWidth = 2048;
inline constexpr int64_t kGemvFoldNormMaxValues = 2304;
// From kGemvFoldNormWarpRowMinRows rows (to kNormFoldMaxRows) of up to this many values, a warp
// normalizes each row in one pass instead: SmolLM2's decode steps of 5 to 8 tokens got 2-4.5%
// faster; of 2 to 4 tokens, taken so, 2-11% slower than by the passes above
// (docs/perf-log/2026-12-02-eagle3-data.md).
inline constexpr int64_t kGemvFoldNormWarpRowMaxWidth = 768;
inline constexpr int64_t kGemvFoldNormWarpRowMinRows = 5;

// Whether the folds below (silu_and_mul: the second) take x [m, H] bf16, the norm (f32 residual
// rows [m, H], contiguous and disjoint; a bf16 weight) and w: gemv_applies, m <=
// kNormFoldMaxRows, H % 8 == 0, H <= kGemvFoldNormMaxWidth, m H <= kGemvFoldNormMaxValues (or a
// warp per row), 16-byte aligned rows, and a grid of one wave on x's device (each block's norm
// delays its start: a second wave would pay it again).
bool gemv_fold_norm_applies(const Tensor& x, const ResidualRmsNorm& norm, const Tensor& w,
                            bool silu_and_mul);

// gemv over rms_norm(norm.residual_in + x) * norm.weight; norm.residual_out = residual_in + x;
// normed ([m, H] bf16, not x; or undefined) gets the normed rows.
void gemv_add_rms_norm(const Tensor& x, const ResidualRmsNorm& norm, const Tensor& w,
                       const Tensor& bias, const Tensor& y, const Tensor& normed,
                       backend::Stream stream);
// gemv_silu_and_mul over the normed rows, as gemv_add_rms_norm.
void gemv_add_rms_norm_silu_and_mul(const Tensor& x, const ResidualRmsNorm& norm, const Tensor& w,
                                    const Tensor& out, backend::Stream stream);

}  // namespace sgl::kernels::cuda
