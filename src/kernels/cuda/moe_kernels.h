// Launchers of the CUDA MoE kernels (declared without CUDA headers), shared by the ops' entry
// points (cuda_moe.h) and fused_moe's driver; device pointers, arguments already validated.
#pragma once

#include <cstdint>

#include "backend/stream.h"
#include "core/dtype.h"

namespace sgl::kernels::cuda {

// Where the alignment writes (device pointers; MoeAlignment's fields, plus the active list).
struct MoeAlignOut {
  int32_t* sorted = nullptr;  // [sorted_size]
  int64_t sorted_size = 0;
  int32_t* expert_ids = nullptr;  // [expert_ids_size]
  int64_t expert_ids_size = 0;
  int32_t* offsets = nullptr;   // [E + 1]
  int32_t* counters = nullptr;  // [0]: num_tokens_post_padded; [1]: active experts (with active)
  int32_t* active = nullptr;    // nullptr, or [>= min(E, entries)]: experts with tokens, ascending
  // Scratch of moe_align_ctas(entries, E) x E values (moe_plan.h), or nullptr: one CTA aligns.
  int32_t* cta_counts = nullptr;
};

// moe_align_block_size over `entries` flat ids (entries < 2^31, experts <= 8192): one CTA, or
// with out.cta_counts, for long prefills, several.
void launch_moe_align(const int32_t* topk_ids, int64_t entries, int64_t experts, int64_t block_size,
                      const MoeAlignOut& out, backend::Stream stream);

// One chunk of fused_moe: its first token's rows, the weights, and its workspace pieces
// (moe_plan.h), the alignment already written there on the grouped and simple paths.
struct MoeExpertsArgs {
  const void* x = nullptr;  // [rows, H], row stride x_stride
  int64_t x_stride = 0;
  const void* w_gate_up = nullptr;  // [E, 2I, H]
  const void* w_down = nullptr;     // [E, H, I]
  int64_t rows = 0, top_k = 0, experts = 0, hidden = 0, inter = 0;
  const int32_t* topk_ids = nullptr;    // [rows, top_k]
  const float* topk_weights = nullptr;  // [rows, top_k]
  const int32_t* sorted = nullptr;      // [max_padded]
  const int32_t* expert_ids = nullptr;  // [max_blocks]
  const int32_t* offsets = nullptr;     // [E + 1]
  const int32_t* counters = nullptr;    // [2]
  const int32_t* active = nullptr;      // [min(E, entries)] (GEMV path)
  int64_t block_size = 0, max_padded = 0, max_blocks = 0;
  void* gathered = nullptr;          // [max_padded, H] bf16 (Hopper path)
  void* act = nullptr;               // [max_padded, I]
  float* partial = nullptr;          // [rows * top_k, H] f32; nullptr on the Hopper path
  void* partial_bf16 = nullptr;      // [rows * top_k, H] bf16: the Hopper path's instead
  int32_t* tile_counters = nullptr;  // [tile_counter_count] (GEMV paths)
  int64_t tile_counter_count = 0;
  void* out = nullptr;  // [rows, H] contiguous; may be x itself
};

// out by the expert GEMVs and their last-CTA sums (bf16). from_alignment: the groups come from
// the block-size-1 alignment with its active list (kGemv); else each CTA finds its expert's
// entries in topk_ids itself (kDecode, no alignment). masked: topk_ids may hold -1 (expert
// parallelism's other ranks' experts), which no CTA computes and the sums skip.
void launch_moe_expert_gemv(const MoeExpertsArgs& a, bool from_alignment, bool masked,
                            backend::Stream stream);
// act and partial by the grouped GEMM on tensor cores (bf16, block size kMoeGemmBlockRows).
void launch_moe_grouped_gemm(const MoeExpertsArgs& a, backend::Stream stream);
// gathered, act and partial_bf16 by the Hopper GEMM's grouped mode (bf16, block size = its token
// tile); moe_hopper_gemm_available: whether the stream's GPU runs it.
void launch_moe_hopper_gemm(const MoeExpertsArgs& a, backend::Stream stream);
bool moe_hopper_gemm_available(backend::Stream stream);
// act and partial one warp per output (f32 or bf16, block size 1).
void launch_moe_simple(const MoeExpertsArgs& a, DType dtype, backend::Stream stream);

}  // namespace sgl::kernels::cuda
