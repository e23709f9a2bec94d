// CUDA entry points of the MoE ops (kernels/moe.h), declared without CUDA headers; arguments
// already validated by the dispatchers in kernels/moe.cpp.
#pragma once

#include <cstdint>

#include "backend/stream.h"
#include "core/tensor.h"
#include "kernels/moe.h"

namespace sgl::kernels::cuda {

// moe_route.cu; up to 512 experts.
void moe_route(const Tensor& router_logits, bool sigmoid, bool renormalize,
               const Tensor& topk_weights, const Tensor& topk_ids, backend::Stream stream);
// moe_route.cu.
void moe_local_ids(const Tensor& topk_ids, int64_t first_expert, int64_t num_local,
                   const Tensor& local_ids, backend::Stream stream);
// moe_align.cu; up to 8192 experts.
void moe_align_block_size(const Tensor& topk_ids, int64_t num_experts, int64_t block_size,
                          const MoeAlignment& out, backend::Stream stream);
// fused_moe.cu: bf16 (tensor cores where rows allow 16-byte loads) or f32 (SIMT). allow_hopper
// false keeps batches off the Hopper GEMM (tests of the portable grouped GEMM on a Hopper GPU).
// masked_pairs: topk_ids may hold -1 (kernels/moe.h).
void fused_moe(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
               const Tensor& topk_weights, const Tensor& topk_ids, const Tensor& workspace,
               const Tensor& out, backend::Stream stream, bool allow_hopper = true,
               bool masked_pairs = false);
// moe_shared_gate.cu: f32 or bf16.
void add_sigmoid_gated(const Tensor& x, const Tensor& w_gate, const Tensor& y, const Tensor& out,
                       backend::Stream stream);

}  // namespace sgl::kernels::cuda
