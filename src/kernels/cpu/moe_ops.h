// CPU implementations of the MoE ops (kernels/moe.h); arguments already validated.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "kernels/moe.h"

namespace sgl::kernels::cpu {

void moe_route(const Tensor& router_logits, MoeScoring scoring, bool renormalize,
               const Tensor& topk_weights, const Tensor& topk_ids);
void moe_local_ids(const Tensor& topk_ids, int64_t first_expert, int64_t num_local,
                   const Tensor& local_ids);
void moe_align_block_size(const Tensor& topk_ids, int64_t num_experts, int64_t block_size,
                          const MoeAlignment& out);
int64_t fused_moe_workspace_bytes(int64_t num_tokens, int64_t top_k, int64_t num_experts,
                                  int64_t hidden, int64_t inter);
void fused_moe(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
               const Tensor& topk_weights, const Tensor& topk_ids, const Tensor& workspace,
               const Tensor& out);
void fused_moe_reference(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                         const Tensor& topk_weights, const Tensor& topk_ids, const Tensor& out);
void add_sigmoid_gated(const Tensor& x, const Tensor& w_gate, const Tensor& y, const Tensor& out);

}  // namespace sgl::kernels::cpu
