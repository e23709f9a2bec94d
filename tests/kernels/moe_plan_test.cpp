// The CUDA fused_moe's plan (host arithmetic, kernels/cuda/moe_plan.h): chunks within the
// workspace budget, the path of a chunk by its (token, slot) pairs, and a workspace that holds
// every chunk's pieces on every path without overlap. Label: cpu.
#include "kernels/cuda/moe_plan.h"

#include <gtest/gtest.h>

#include <utility>

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
      EXPECT_LE(chunk * s.top_k * (s.hidden * 6 + s.inter * 4), kMoeChunkBudgetBytes);
    }
  }
}

TEST(MoePlan, PathByPairs) {
  for (const bool hopper : {false, true}) {
    const MoePath batch = hopper ? MoePath::kHopper : MoePath::kGrouped;
    // Hopper: the decode GEMV up to 16 pairs, then the Hopper GEMM; else 64 and 1024.
    EXPECT_EQ(moe_path(true, hopper, 2, 8), MoePath::kDecode);
    EXPECT_EQ(moe_path(true, hopper, 16, 1), MoePath::kDecode);
    EXPECT_EQ(moe_path(true, hopper, 3, 8), hopper ? batch : MoePath::kDecode);
    EXPECT_EQ(moe_path(true, hopper, 17, 1), hopper ? batch : MoePath::kDecode);
    EXPECT_EQ(moe_path(true, hopper, 8, 8), hopper ? batch : MoePath::kDecode);
    EXPECT_EQ(moe_path(true, hopper, 9, 8), hopper ? batch : MoePath::kGemv);
    EXPECT_EQ(moe_path(true, hopper, 64, 1), hopper ? batch : MoePath::kDecode);
    EXPECT_EQ(moe_path(true, hopper, 65, 1), hopper ? batch : MoePath::kGemv);
    EXPECT_EQ(moe_path(true, hopper, 128, 8), hopper ? batch : MoePath::kGemv);
    EXPECT_EQ(moe_path(true, hopper, 129, 8), batch);
    EXPECT_EQ(moe_path(true, hopper, 1024, 1), hopper ? batch : MoePath::kGemv);
    EXPECT_EQ(moe_path(true, hopper, 1025, 1), batch);
    EXPECT_EQ(moe_path(false, hopper, 1, 1), MoePath::kSimple);
    EXPECT_EQ(moe_path(false, hopper, 5000, 8), MoePath::kSimple);
  }
}

// The tile holds twice an expert's average share, up to the largest tile.
TEST(MoePlan, HopperTokenTile) {
  EXPECT_EQ(moe_hopper_token_tile(1024, 128), 16);  // decode at batch 128, top-8
  EXPECT_EQ(moe_hopper_token_tile(1032, 128), 32);
  EXPECT_EQ(moe_hopper_token_tile(2048, 128), 32);  // batch 256
  EXPECT_EQ(moe_hopper_token_tile(2049, 128), 64);
  EXPECT_EQ(moe_hopper_token_tile(4096, 8), kMoeHopperMaxTile);
  EXPECT_EQ(moe_hopper_token_tile(32768, 128), kMoeHopperMaxTile);
  EXPECT_EQ(moe_hopper_token_tile(1900, 60), 64);
}

// One CTA up to kMoeAlignOneCtaEntries entries (decode) and for experts past
// kMoeAlignMaxSplitExperts; else about kMoeAlignEntriesPerCta a CTA, within the CTA and scan
// bounds.
TEST(MoePlan, AlignCtas) {
  EXPECT_EQ(moe_align_ctas(1, 128), 1);
  EXPECT_EQ(moe_align_ctas(kMoeAlignOneCtaEntries, 128), 1);
  EXPECT_EQ(moe_align_ctas(kMoeAlignOneCtaEntries + 1, 128), 3);
  EXPECT_EQ(moe_align_ctas(65536, 128), 32);  // Qwen3-30B-A3B, 8192 tokens
  EXPECT_EQ(moe_align_ctas(1 << 20, 128), kMoeAlignMaxCtas);
  EXPECT_EQ(moe_align_ctas(65536, 1024), kMoeAlignMaxScannedCounts / 1024);  // the scan bound
  EXPECT_EQ(moe_align_ctas(65536, kMoeAlignMaxSplitExperts + 1), 1);
  EXPECT_EQ(moe_align_ctas(65536, kMoeAlignMaxSplitExperts), kMoeAlignMaxScannedCounts / 4096);
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
        for (const auto [vector_ok, hopper] :
             {std::pair{true, true}, std::pair{true, false}, std::pair{false, false}}) {
          const MoePath path = moe_path(vector_ok, hopper, rows, s.top_k);
          for (const int64_t act_bytes : {2, 4}) {
            if (path != MoePath::kSimple && act_bytes == 4) continue;  // tensor cores: bf16
            const MoeWorkspaceLayout at = moe_workspace_layout(path, s, rows, act_bytes);
            SCOPED_TRACE(::testing::Message() << "T=" << tokens << " rows=" << rows << " path="
                                              << static_cast<int>(path) << " act " << act_bytes);
            EXPECT_LE(at.bytes, bytes);
            const MoeAlignSizes sizes = moe_align_sizes(rows, s.top_k, s.experts, at.block_size);
            EXPECT_EQ(at.max_padded, sizes.max_blocks * at.block_size);  // whole blocks
            EXPECT_GE(at.max_padded, sizes.max_padded);
            const int64_t starts[] = {at.sorted,        at.expert_ids,   at.offsets, at.counters,
                                      at.active,        at.gathered,     at.act,     at.partial,
                                      at.tile_counters, at.align_counts, at.bytes};
            const int64_t align_ctas =
                path == MoePath::kDecode ? 1 : moe_align_ctas(rows * s.top_k, s.experts);
            EXPECT_EQ(at.align_ctas, align_ctas);
            const int64_t sizes_bytes[] = {
                at.max_padded * 4,
                sizes.max_blocks * 4,
                (s.experts + 1) * 4,
                8,
                std::min(s.experts, rows * s.top_k) * 4,
                path == MoePath::kHopper ? at.max_padded * s.hidden * 2 : 0,
                at.max_padded * s.inter * act_bytes,
                rows * s.top_k * s.hidden * (path == MoePath::kHopper ? 2 : 4),
                (s.hidden + 15) / 16 * 4,
                align_ctas > 1 ? align_ctas * s.experts * 4 : 0};
            EXPECT_EQ(at.tile_counter_count, (s.hidden + 15) / 16);
            // The GEMVs index act by entry.
            if (path == MoePath::kDecode || path == MoePath::kGemv) {
              EXPECT_EQ(at.max_padded, rows * s.top_k);
            }
            if (path == MoePath::kHopper) {
              EXPECT_EQ(at.block_size, moe_hopper_token_tile(rows * s.top_k, s.experts));
            }
            for (int i = 0; i < 10; ++i) {
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
