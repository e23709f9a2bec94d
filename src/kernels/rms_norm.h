// RMSNorm, and RMSNorm fused with the residual add (as SGLang's fused_add_rmsnorm).
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight. x, out: [..., D] with a contiguous
// last dim (rows may be strided; out may alias x); weight: [D].
void rms_norm(const Tensor& x, const Tensor& weight, double eps, const Tensor& out,
              backend::Stream stream);

// Per-head q and k norms (Qwen3) in one op, in place: q = rms_norm(q, q_weight) and
// k = rms_norm(k, k_weight), the same arithmetic as rms_norm row by row. q, k: [..., D] head
// rows with contiguous last dims (e.g. split_heads views of one qkv buffer; rows may be strided);
// weights: [D]. One launch on CUDA (a warp per head row) instead of two.
void qk_rms_norm(const Tensor& q, const Tensor& k, const Tensor& q_weight, const Tensor& k_weight,
                 double eps, backend::Stream stream);

// residual += x; x = rms_norm(residual) * weight. x, residual: contiguous [T, D]. On CUDA the
// residual may be f32 under a bf16 x (the model keeps its residual stream in f32).
void fused_add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor& weight, double eps,
                        backend::Stream stream);

}  // namespace sgl::kernels
