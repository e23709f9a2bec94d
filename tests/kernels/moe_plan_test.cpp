// The CUDA fused_moe's plan (host arithmetic, kernels/cuda/moe_plan.h): chunks within the
// workspace budget, the path of a chunk by its (token, slot) pairs, and a workspace that holds
// every chunk's pieces on every path without overlap. Label: cpu.
#include "kernels/cuda/moe_plan.h"

#include <gtest/gtest.h>

#include "kernels/moe.h"

namespace sgl::kernels::cuda {
namespace {

TEST(MoePlan, ChunksStayNearTheBudget) {
  EXPECT_EQ(moe_chunk_tokens({1, 8, 128, 2048, 768}), 1);
  EXPECT_EQ(moe_chunk_tokens({300, 8, 128, 72, 40}), 300);
  for (const MoeShape s :
       {MoeShape{100000, 8, 128, 2048, 768}, MoeShape{100000, 2, 8, 4096, 14336},
        MoeShape{100000, 8, 256, 7168, 2048}, MoeShape{100000, 8, 128, 72, 40}}) {
    const int64_t chunk = moe_chunk_tokens(s);
    EXPECT_EQ(chunk % 64, 0);
    EXPECT_GE(chunk, kMoeMinChunkTokens);
    EXPECT_LE(chunk, kMoeMaxChunkTokens);
    if (chunk > kMoeMinChunkTokens) {
      EXPECT_LE(chunk * s.top_k * (s.hidden + s.inter) * 4, kMoeChunkBudgetBytes);
    }
  }
}

TEST(MoePlan, PathByPairs) {
  EXPECT_EQ(moe_path(true, 8, 8), MoePath::kDecode);
  EXPECT_EQ(moe_path(true, 9, 8), MoePath::kGemv);
  EXPECT_EQ(moe_path(true, 64, 1), MoePath::kDecode);
  EXPECT_EQ(moe_path(true, 65, 1), MoePath::kGemv);
  EXPECT_EQ(moe_path(true, 128, 8), MoePath::kGemv);
  EXPECT_EQ(moe_path(true, 129, 8), MoePath::kGrouped);
  EXPECT_EQ(moe_path(true, 1024, 1), MoePath::kGemv);
  EXPECT_EQ(moe_path(true, 1025, 1), MoePath::kGrouped);
  EXPECT_EQ(moe_path(false, 1, 1), MoePath::kSimple);
  EXPECT_EQ(moe_path(false, 5000, 8), MoePath::kSimple);
}

// Every chunk of a call, on the path its pairs and dtype give, fits the workspace the op asks
// for; pieces are 256-byte aligned, in order and disjoint.
TEST(MoePlan, WorkspaceHoldsEveryChunk) {
  for (const MoeShape base : {MoeShape{0, 8, 128, 2048, 768}, MoeShape{0, 2, 8, 4096, 14336},
                              MoeShape{0, 1, 5, 36, 20}, MoeShape{0, 8, 128, 72, 40}}) {
    for (int64_t tokens : {0, 1, 7, 8, 9, 64, 300, 5000, 9000}) {
      MoeShape s = base;
      s.tokens = tokens;
      const int64_t bytes = moe_workspace_bytes(s);
      EXPECT_EQ(
          fused_moe_workspace_bytes(Device::cuda(), tokens, s.top_k, s.experts, s.hidden, s.inter),
          bytes);
      const int64_t chunk = std::max<int64_t>(moe_chunk_tokens(s), 1);
      for (int64_t first = 0; first < tokens; first += chunk) {
        const int64_t rows = std::min(chunk, tokens - first);
        for (const bool vector_ok : {true, false}) {
          const MoePath path = moe_path(vector_ok, rows, s.top_k);
          for (const int64_t act_bytes : {2, 4}) {
            if (path != MoePath::kSimple && act_bytes == 4) continue;  // tensor cores: bf16
            const MoeWorkspaceLayout at = moe_workspace_layout(path, s, rows, act_bytes);
            SCOPED_TRACE(::testing::Message() << "T=" << tokens << " rows=" << rows << " path="
                                              << static_cast<int>(path) << " act " << act_bytes);
            EXPECT_LE(at.bytes, bytes);
            const MoeAlignSizes sizes = moe_align_sizes(rows, s.top_k, s.experts, at.block_size);
            const int64_t starts[] = {at.sorted,   at.expert_ids,    at.offsets,
                                      at.counters, at.active,        at.act,
                                      at.partial,  at.tile_counters, at.bytes};
            const int64_t sizes_bytes[] = {sizes.max_padded * 4,
                                           sizes.max_blocks * 4,
                                           (s.experts + 1) * 4,
                                           8,
                                           std::min(s.experts, rows * s.top_k) * 4,
                                           sizes.max_padded * s.inter * act_bytes,
                                           rows * s.top_k * s.hidden * 4,
                                           (s.hidden + 15) / 16 * 4};
            EXPECT_EQ(at.tile_counter_count, (s.hidden + 15) / 16);
            // The GEMVs index act by entry.
            if (path == MoePath::kDecode || path == MoePath::kGemv) {
              EXPECT_EQ(at.max_padded, rows * s.top_k);
            }
            for (int i = 0; i < 8; ++i) {
              EXPECT_EQ(starts[i] % 256, 0) << "piece " << i;
              EXPECT_LE(starts[i] + sizes_bytes[i], starts[i + 1]) << "piece " << i;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace sgl::kernels::cuda
