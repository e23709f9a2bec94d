// The CUDA fused_moe's chunking, path choice and workspace layout (moe_plan.h).
#include "kernels/cuda/moe_plan.h"

#include <algorithm>
#include <utility>

#include "kernels/cuda/hopper_gemm_plan.h"
#include "kernels/moe.h"

namespace sgl::kernels::cuda {
namespace {

int64_t round_up(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

}  // namespace

int64_t moe_chunk_tokens(const MoeShape& s) {
  // act (at most 4 bytes an element on the f32 path), gathered (bf16) and partial (f32) grow
  // with tokens * top_k.
  const int64_t per_token = s.top_k * (s.inter * 4 + s.hidden * 6);
  int64_t chunk = std::clamp(kMoeChunkBudgetBytes / std::max<int64_t>(per_token, 1),
                             kMoeMinChunkTokens, kMoeMaxChunkTokens);
  chunk = chunk / 64 * 64;
  return std::min(s.tokens, chunk);
}

MoePath moe_path(bool vector_ok, bool hopper, int64_t rows, int64_t top_k) {
  if (!vector_ok) return MoePath::kSimple;
  const int64_t pairs = rows * top_k;
  if (pairs <= (hopper ? kMoeHopperDecodeMaxPairs : kMoeDecodeMaxPairs)) return MoePath::kDecode;
  if (hopper) return MoePath::kHopper;
  return pairs <= kMoeGemvMaxPairs ? MoePath::kGemv : MoePath::kGrouped;
}

int64_t moe_align_ctas(int64_t entries, int64_t experts) {
  if (entries <= kMoeAlignOneCtaEntries || experts > kMoeAlignMaxSplitExperts) return 1;
  const int64_t by_entries = (entries + kMoeAlignEntriesPerCta - 1) / kMoeAlignEntriesPerCta;
  const int64_t by_scan = kMoeAlignMaxScannedCounts / std::max<int64_t>(experts, 1);
  return std::clamp<int64_t>(std::min(by_entries, by_scan), 1, kMoeAlignMaxCtas);
}

int64_t moe_hopper_token_tile(int64_t entries, int64_t experts) {
  // Twice the share: most experts then fit one tile, and the ones above average too.
  const int64_t share = (entries + experts - 1) / std::max<int64_t>(experts, 1);
  for (int64_t tile : kHopperTokenTiles) {
    if (tile >= 2 * share || tile == kMoeHopperMaxTile) return tile;
  }
  return kMoeHopperMaxTile;
}

MoeWorkspaceLayout moe_workspace_layout(MoePath path, const MoeShape& s, int64_t rows,
                                        int64_t act_bytes) {
  MoeWorkspaceLayout at;
  at.entries = rows * s.top_k;
  at.block_size = path == MoePath::kGrouped  ? kMoeGemmBlockRows
                  : path == MoePath::kHopper ? moe_hopper_token_tile(at.entries, s.experts)
                                             : 1;
  const MoeAlignSizes sizes = moe_align_sizes(rows, s.top_k, s.experts, at.block_size);
  // Whole blocks: the Hopper GEMM reads its token tiles whole.
  at.max_blocks = sizes.max_blocks;
  at.max_padded = sizes.max_blocks * at.block_size;
  auto take = [&at](int64_t piece_bytes) {
    const int64_t offset = at.bytes;
    at.bytes += round_up(piece_bytes, 256);
    return offset;
  };
  at.sorted = take(at.max_padded * 4);
  at.expert_ids = take(at.max_blocks * 4);
  at.offsets = take((s.experts + 1) * 4);
  at.counters = take(2 * 4);
  at.active = take(std::min(s.experts, at.entries) * 4);
  at.gathered = take(path == MoePath::kHopper ? at.max_padded * s.hidden * 2 : 0);
  at.act = take(at.max_padded * s.inter * act_bytes);
  at.partial_bf16 = path == MoePath::kHopper;
  at.partial = take(at.entries * s.hidden * (at.partial_bf16 ? 2 : 4));
  at.tile_counter_count = (s.hidden + 15) / 16;
  at.tile_counters = take(at.tile_counter_count * 4);
  at.align_ctas = path == MoePath::kDecode ? 1 : moe_align_ctas(at.entries, s.experts);
  at.align_counts = take(at.align_ctas > 1 ? at.align_ctas * s.experts * 4 : 0);
  return at;
}

int64_t moe_workspace_bytes(const MoeShape& s) {
  const int64_t chunk = moe_chunk_tokens(s);
  int64_t bytes = std::max({moe_workspace_layout(MoePath::kHopper, s, chunk, 2).bytes,
                            moe_workspace_layout(MoePath::kGrouped, s, chunk, 2).bytes,
                            moe_workspace_layout(MoePath::kSimple, s, chunk, 4).bytes});
  for (const auto& [path, pairs] : {std::pair{MoePath::kDecode, kMoeDecodeMaxPairs},
                                    std::pair{MoePath::kGemv, kMoeGemvMaxPairs}}) {
    const int64_t rows = std::min(chunk, pairs / s.top_k);
    bytes = std::max(bytes, moe_workspace_layout(path, s, rows, 2).bytes);
  }
  return bytes;
}

}  // namespace sgl::kernels::cuda
