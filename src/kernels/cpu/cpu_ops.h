// CPU implementations of the ops; arguments already validated by the dispatchers in kernels/.
#pragma once

#include "core/tensor.h"
#include "kernels/pooling.h"

namespace sgl::kernels::cpu {

void embedding(const Tensor& ids, const Tensor& table, const Tensor& out);
void embedding_shard(const Tensor& ids, const Tensor& table, int64_t vocab_start,
                     int64_t vocab_size, const Tensor& out);
void rms_norm(const Tensor& x, const Tensor& weight, double eps, const Tensor& out);
void qk_rms_norm(const Tensor& q, const Tensor& k, const Tensor& q_weight, const Tensor& k_weight,
                 double eps);
void fused_add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor& weight, double eps);
void rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& cos_sin);
void linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y);
void add_lora(const Tensor& x, const Tensor& a, const Tensor& b, float scaling,
              const Tensor& shrunk, const Tensor& y);
void silu_and_mul(const Tensor& gate_up, const Tensor& out);
void relu(const Tensor& x);
void gather_last_tokens(const Tensor& src, const Tensor& qo_indptr, const Tensor& out);
void scatter_rows(const Tensor& src, const Tensor& rows, const Tensor& dst);
void pool_rows(const Tensor& src, const Tensor& qo_indptr, RowPool pool, const Tensor& out);

}  // namespace sgl::kernels::cpu
