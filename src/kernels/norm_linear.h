// The residual add + RMSNorm between a decoder's blocks folded into the projection that reads
// its output: the norm's own kernel, and its place in the decode chain, are gone. On CUDA for one
// token (a batch-1 decode step): every block of the projection's GEMV adds and normalizes the
// row itself, with fused_add_rms_norm's arithmetic (the same bits), and one block writes the sum
// out, to a second buffer, since the other blocks still read the first.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// The projection a norm folds into: a linear (add_rms_norm_linear) or the MLP's gate/up with its
// activation (add_rms_norm_linear_silu_and_mul).
enum class FoldedProjection { kLinear, kSiluAndMul };

struct ResidualRmsNorm {
  Tensor residual_in;   // f32 [1, H]: the residual stream before the add
  Tensor residual_out;  // f32 [1, H], disjoint from residual_in: gets residual_in + x
  Tensor weight;        // [H]
  double eps = 0;
};

// Whether the device folds `norm` of x [1, H] into a `kind` projection by w [N, H] (the calls
// below). Where it does not, run fused_add_rms_norm and the plain projection.
bool norm_folds_into_linear(const Tensor& x, const ResidualRmsNorm& norm, const Tensor& w,
                            FoldedProjection kind);

// residual_out = residual_in + x; xn = rms_norm(residual_out) * weight (fused_add_rms_norm's
// values); y = linear(xn, w, bias); normed (undefined, or [1, H] not aliasing x) = xn.
void add_rms_norm_linear(const Tensor& x, const ResidualRmsNorm& norm, const Tensor& w,
                         const Tensor& bias, const Tensor& y, const Tensor& normed,
                         backend::Stream stream);

// As add_rms_norm_linear, into linear_silu_and_mul: out [1, I] = silu(xn gate^T) * (xn up^T).
void add_rms_norm_linear_silu_and_mul(const Tensor& x, const ResidualRmsNorm& norm,
                                      const Tensor& w_gate_up, const Tensor& out,
                                      backend::Stream stream);

}  // namespace sgl::kernels
