// Mixture-of-Experts ops: routing, token-to-expert alignment, the experts' fused MLP, and the
// shared expert's sigmoid gate. Fixed shapes, caller-provided memory: no allocation, no host
// synchronisation on devices that queue work, so a CUDA graph can capture them.
#pragma once

#include <cstdint>

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// How router logits become expert scores.
enum class MoeScoring : uint8_t {
  kSoftmax,  // softmax over all experts (Mixtral, Qwen2-MoE, Qwen3-MoE)
  kSigmoid,  // sigmoid of each logit on its own
};

// SGLang's select_experts: per token, scores = softmax or sigmoid of its router logits in f32,
// the k = topk_ids.size(1) highest scores in descending order (equal scores: the lower expert
// index first), and with `renormalize` the k weights divided by their sum (no epsilon). Matches
// transformers: Mixtral is softmax + renormalize; Qwen2-MoE and Qwen3-MoE are softmax with
// renormalize = config.norm_topk_prob (false and true in the released models).
// router_logits: f32 [T, E], last dim contiguous; topk_weights: f32 [T, k]; topk_ids: i32 [T, k]
// (both contiguous); 1 <= k <= E.
void moe_route(const Tensor& router_logits, MoeScoring scoring, bool renormalize,
               const Tensor& topk_weights, const Tensor& topk_ids, backend::Stream stream);

// Sizes of moe_align_block_size's outputs for T tokens routed to k experts each: worst cases,
// so the caller allocates once for its largest T.
struct MoeAlignSizes {
  int64_t max_padded = 0;  // entries of sorted_token_ids: T*k + min(E, T*k) * (block_size - 1)
  int64_t max_blocks = 0;  // entries of expert_ids: max_padded / block_size, rounded up
};
MoeAlignSizes moe_align_sizes(int64_t num_tokens, int64_t top_k, int64_t num_experts,
                              int64_t block_size);

// Where moe_align_block_size writes: i32, contiguous, on topk_ids' device, each at least the size
// moe_align_sizes gives. Names are SGLang's.
struct MoeAlignment {
  // [>= max_padded]: the flat indices t*k + j of topk_ids grouped by expert (expert 0 first);
  // each expert's group is padded to a multiple of block_size with the sentinel T*k, and so is
  // every entry from num_tokens_post_padded on. The order inside a group is unspecified (the
  // CPU writes ascending indices).
  Tensor sorted_token_ids;
  // [>= max_blocks]: expert_ids[b] is the expert of entries [b*block_size, (b+1)*block_size);
  // -1 for every block from num_tokens_post_padded / block_size on.
  Tensor expert_ids;
  // [E + 1]: where each expert's padded group starts in sorted_token_ids; [E] is the total
  // (SGLang's cumsum_buffer). An expert with no tokens has an empty group.
  Tensor expert_offsets;
  // [1]: the padded total, a multiple of block_size (expert_offsets[E]).
  Tensor num_tokens_post_padded;
};

// SGLang's moe_align_block_size: groups the (token, slot) pairs of topk_ids (i32 [T, k],
// contiguous, ids in [0, num_experts), or -1 for a masked pair, which joins no group) by expert
// and pads each group to whole blocks, so a grouped GEMM can give every block of block_size rows
// a single expert.
void moe_align_block_size(const Tensor& topk_ids, int64_t num_experts, int64_t block_size,
                          const MoeAlignment& out, backend::Stream stream);

// Bytes of workspace fused_moe needs on `device` for up to num_tokens tokens (the backend picks
// its own layout, block size included).
int64_t fused_moe_workspace_bytes(Device device, int64_t num_tokens, int64_t top_k,
                                  int64_t num_experts, int64_t hidden, int64_t inter);

// The routed experts' MLP, weighted and summed:
//   out[t] = sum_j topk_weights[t, j] * down_e(silu(gate_e x[t]) * up_e x[t]), e = topk_ids[t, j]
// x: [T, H] (row stride allowed); w_gate_up: [E, 2I, H] = per expert [gate; up], as the dense
// gate_up_proj; w_down: [E, H, I]; topk_weights: f32 [T, k]; topk_ids: i32 [T, k], ids in
// [0, E), or with `masked_pairs` also -1 for a masked pair, which adds nothing (moe_local_ids: the
// experts another rank holds; a token with every pair masked gets zeros; on CUDA the decode
// GEMVs then run instances that read the masks); out: [T, H] contiguous, overwritten: x
// itself (in place) or not overlapping it.
// workspace: any dtype, contiguous, 16-byte aligned, at least fused_moe_workspace_bytes(...)
// bytes; its contents are scratch. Accumulation is in f32. CPU: f32 tensors.
void fused_moe(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
               const Tensor& topk_weights, const Tensor& topk_ids, const Tensor& workspace,
               const Tensor& out, backend::Stream stream, bool masked_pairs = false);

// The host loop fused_moe is checked against: per token, per selected expert, in double, no
// workspace. Host tensors of fused_moe's shapes, f32.
void fused_moe_reference(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                         const Tensor& topk_weights, const Tensor& topk_ids, const Tensor& out);

// Expert parallelism's routing at one rank, whose experts are [first_expert, first_expert +
// num_local): local_ids[t, j] = topk_ids[t, j] - first_expert where the id is one of them, else
// -1 (a masked pair for fused_moe). topk_ids, local_ids: i32 [T, k] contiguous, on one device.
void moe_local_ids(const Tensor& topk_ids, int64_t first_expert, int64_t num_local,
                   const Tensor& local_ids, backend::Stream stream);

// Qwen2-MoE's shared expert gate: out[t] += sigmoid(x[t] . w_gate) * y[t].
// x: [T, H] (row stride allowed); w_gate: [1, H] (shared_expert_gate.weight); y, out: [T, H]
// contiguous, out not overlapping x or y. CPU: f32.
void add_sigmoid_gated(const Tensor& x, const Tensor& w_gate, const Tensor& y, const Tensor& out,
                       backend::Stream stream);

}  // namespace sgl::kernels
