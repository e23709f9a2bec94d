// CUDA launchers of the ops (declared without CUDA headers); arguments already validated.
#pragma once

#include "backend/stream.h"
#include "core/status.h"
#include "core/tensor.h"
#include "kernels/pooling.h"

namespace sgl::kernels::cuda {

void embedding(const Tensor& ids, const Tensor& table, const Tensor& out, backend::Stream stream);
void rms_norm(const Tensor& x, const Tensor& weight, double eps, const Tensor& out,
              backend::Stream stream);
void qk_rms_norm(const Tensor& q, const Tensor& k, const Tensor& q_weight, const Tensor& k_weight,
                 double eps, backend::Stream stream);
void fused_add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor& weight, double eps,
                        backend::Stream stream);
void rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& cos_sin,
          backend::Stream stream);
void linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
            backend::Stream stream);
// linear through the library GEMM (cuBLASLt) whatever the token count; linear() itself sends
// decode-sized token counts to gemv (gemv.h).
void linear_library(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                    backend::Stream stream);
void silu_and_mul(const Tensor& gate_up, const Tensor& out, backend::Stream stream);
void relu(const Tensor& x, backend::Stream stream);
void linear_silu_and_mul(const Tensor& x, const Tensor& w_gate_up, const Tensor& gate_up,
                         const Tensor& out, backend::Stream stream);
// y += scaling * (x a^T) b^T (kernels/lora.h); a, b, shrunk f32.
void add_lora(const Tensor& x, const Tensor& a, const Tensor& b, float scaling,
              const Tensor& shrunk, const Tensor& y, backend::Stream stream);
void gather_last_tokens(const Tensor& src, const Tensor& qo_indptr, const Tensor& out,
                        backend::Stream stream);
void scatter_rows(const Tensor& src, const Tensor& rows, const Tensor& dst, backend::Stream stream);
void pool_rows(const Tensor& src, const Tensor& qo_indptr, RowPool pool, const Tensor& out,
               backend::Stream stream);

// Sends `stream`'s linear layers of 17-256 tokens to the Hopper GEMM (hopper_gemm.h) or back
// to cuBLASLt; fails where the GPU cannot run it.
Status set_hopper_linear(backend::Stream stream, bool enable);

// y[r, :] += bias (used by linear).
void add_bias(const Tensor& y, const Tensor& bias, backend::Stream stream);

}  // namespace sgl::kernels::cuda
