// How the Hopper GEMM cuts problems into CTAs (kernels/cuda/hopper_gemm_plan.h): token tiles,
// k splits for Llama-3-8B's decode shapes on a 132-SM GPU, and the limits every plan keeps.
// Host arithmetic only. Label: cpu.
#include "kernels/cuda/hopper_gemm_plan.h"

#include <gtest/gtest.h>

namespace sgl::kernels::cuda {
namespace {

// One CTA per SM; a cluster of c CTAs needs c free SMs.
int h100_like(int /*token_tile*/, int multicast, int splits) { return 132 / (multicast * splits); }

TEST(HopperGemmPlan, TokenTileIsTheSmallestThatHoldsM) {
  EXPECT_EQ(hopper_token_tile(1), 16);
  EXPECT_EQ(hopper_token_tile(16), 16);
  EXPECT_EQ(hopper_token_tile(17), 32);
  EXPECT_EQ(hopper_token_tile(64), 64);
  EXPECT_EQ(hopper_token_tile(65), 128);
  EXPECT_EQ(hopper_token_tile(256), 256);
  EXPECT_EQ(hopper_token_tile(1000), 256);
  EXPECT_EQ(plan_hopper_gemm(1000, 4, 64, h100_like).token_tiles, 4);
}

// The kernels' instance tables: each built tile reaches its own instance, anything else the
// largest.
TEST(HopperGemmPlan, TokenTileDispatchReachesEachTile) {
  for (int tile : kHopperTokenTiles) {
    EXPECT_EQ(with_hopper_token_tile(tile, [](auto t) { return t.value; }), tile);
  }
  EXPECT_EQ(with_hopper_token_tile(512, [](auto t) { return t.value; }), 256);
}

// The limits every plan keeps, over Llama-3-8B-like shapes and odd ones.
TEST(HopperGemmPlan, KeepsItsLimits) {
  for (int64_t m : {1, 16, 17, 64, 100, 256, 700}) {
    for (int64_t tiles : {1, 3, 32, 48, 224, 1002}) {
      for (int64_t k_blocks : {1, 3, 64, 224}) {
        const HopperGemmPlan plan = plan_hopper_gemm(m, tiles, k_blocks, h100_like);
        EXPECT_EQ(tiles % plan.multicast, 0) << m << " " << tiles << " " << k_blocks;
        EXPECT_LE(plan.multicast * plan.splits, kHopperMaxClusterSize);
        EXPECT_GE(plan.token_tile / plan.multicast, 8);
        if (plan.token_tile < 128) EXPECT_EQ(plan.multicast, 1);
        EXPECT_TRUE(plan.splits == 1 || k_blocks >= 2 * plan.splits);
        EXPECT_EQ(plan.token_tiles, (m + plan.token_tile - 1) / plan.token_tile);
      }
    }
  }
}

TEST(HopperGemmPlan, SplitsKWhereOutputTilesAreFew) {
  // Llama-3-8B at 64 tokens, 64-k blocks: o and down have 32 output tiles of 128 rows, qkv 48,
  // the LM head 1002. o and down split k 4 ways: 128 CTAs, one wave.
  EXPECT_EQ(plan_hopper_gemm(64, 32, 64, h100_like).splits, 4);
  EXPECT_EQ(plan_hopper_gemm(64, 32, 224, h100_like).splits, 4);
  EXPECT_GT(plan_hopper_gemm(64, 48, 64, h100_like).splits, 1);
  EXPECT_EQ(plan_hopper_gemm(64, 1002, 64, h100_like).splits, 1);  // 8 waves already
}

TEST(HopperGemmPlan, MulticastsLargeTokenTilesInOneWave) {
  // o at 256 tokens: a token tile (32 KB a k-block) outweighs the weight tile (16 KB), so
  // adjacent weight tiles share it; the whole GEMM still fits in one wave.
  const HopperGemmPlan o = plan_hopper_gemm(256, 32, 64, h100_like);
  EXPECT_GT(o.multicast, 1);
  EXPECT_LE(32 * o.splits, 132);
  EXPECT_GT(o.splits, 1);
}

TEST(HopperGemmPlan, SkipsClustersThatCannotBeResident) {
  EXPECT_EQ(plan_hopper_gemm(64, 1, 1, h100_like).splits, 1);
  EXPECT_LE(plan_hopper_gemm(64, 1, 5, h100_like).splits, 2);
  EXPECT_EQ(plan_hopper_gemm(64, 1, 64, h100_like).splits, kHopperMaxSplits);
  auto single_ctas = [](int, int multicast, int splits) {
    return multicast * splits == 1 ? 132 : 0;
  };
  const HopperGemmPlan plan = plan_hopper_gemm(256, 32, 64, single_ctas);
  EXPECT_EQ(plan.splits, 1);
  EXPECT_EQ(plan.multicast, 1);
  EXPECT_DEATH(plan_hopper_gemm(64, 1, 64, [](int, int, int) { return 0; }), "no resident");
}

}  // namespace
}  // namespace sgl::kernels::cuda
