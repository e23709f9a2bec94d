// The residual add + RMSNorm between a decoder's blocks folded into the projection that reads
// its output: the norm's own kernel, and its place in the decode chain, are gone. On CUDA for a
// few tokens (a small decode batch, a speculative verify pass): every block of the projection's
// GEMV adds and normalizes the rows itself, with fused_add_rms_norm's arithmetic (the same
// bits), and one block writes the sums out, to second buffers, since the other blocks still read
// the first.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// The projection a norm folds into: a linear (add_rms_norm_linear) or the MLP's gate/up with its
// activation (add_rms_norm_linear_silu_and_mul).
enum class FoldedProjection { kLinear, kSiluAndMul };

// The most rows a norm folds for: a caller's spare residual rows (ResidualRmsNorm::residual_out)
// need be no more.
inline constexpr int64_t kNormFoldMaxRows = 8;

struct ResidualRmsNorm {
  Tensor residual_in;   // f32 [m, H]: the residual stream before the add
  Tensor residual_out;  // f32 [m, H], disjoint from residual_in: gets residual_in + x
  Tensor weight;        // [H]
  double eps = 0;
};

// Whether the device folds `norm` of x [m, H] into a `kind` projection by w [N, H] (the calls
// below): m <= kNormFoldMaxRows, and what the device's kernel takes. Where it does not, run
// fused_add_rms_norm and the plain projection.
bool norm_folds_into_linear(const Tensor& x, const ResidualRmsNorm& norm, const Tensor& w,
                            FoldedProjection kind);

// residual_out = residual_in + x; xn = rms_norm(residual_out) * weight (fused_add_rms_norm's
// values); y = linear(xn, w, bias); normed (undefined, or [m, H] not aliasing x) = xn.
void add_rms_norm_linear(const Tensor& x, const ResidualRmsNorm& norm, const Tensor& w,
                         const Tensor& bias, const Tensor& y, const Tensor& normed,
                         backend::Stream stream);

// As add_rms_norm_linear, into linear_silu_and_mul: out [m, I] = silu(xn gate^T) * (xn up^T).
void add_rms_norm_linear_silu_and_mul(const Tensor& x, const ResidualRmsNorm& norm,
                                      const Tensor& w_gate_up, const Tensor& out,
                                      backend::Stream stream);

}  // namespace sgl::kernels
