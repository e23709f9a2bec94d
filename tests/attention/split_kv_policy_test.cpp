// The split-KV decode policy (attention/cuda/split_kv_policy.h), on the host: chunks are whole
// multiples of the kernel's alignment, the non-empty splits cover every position once, the
// split count fills one wave of resident CTAs, and the merge kernel's early launch is limited to
// batches of few CTAs. Label: cpu.
#include "attention/cuda/split_kv_policy.h"

#include <gtest/gtest.h>

namespace sgl::attention::cuda {
namespace {

TEST(SplitKvPolicy, ChunksAreAlignedAndCoverEveryPositionOnce) {
  for (int align : {64, 256}) {
    for (int splits : {1, 2, 3, 16, kMaxSplits}) {
      for (int seq_len : {1, 63, 64, 65, 192, 255, 256, 257, 1000, 4097, 33000}) {
        const int chunk = split_chunk_len(seq_len, splits, align);
        const int count = split_count(seq_len, splits, align);
        EXPECT_EQ(chunk % align, 0) << seq_len << " " << splits << " " << align;
        EXPECT_GE(count, 1);
        EXPECT_LE(count, splits);
        // Splits [s * chunk, min(seq_len, (s + 1) * chunk)) for s < count tile [0, seq_len).
        EXPECT_LT((count - 1) * chunk, seq_len);
        EXPECT_GE(count * chunk, seq_len);
      }
    }
  }
  EXPECT_EQ(split_count(0, 8, 64), 0);
}

TEST(SplitKvPolicy, ShortContextsTakeOneSplitAtTheWideAlignment) {
  // 16 splits offered (batch 1, 8 KV heads, 132 wide CTAs): a 192-token context is one split
  // of 256 tokens at the wide alignment, three of 64 at the narrow one.
  EXPECT_EQ(split_count(192, 16, 256), 1);
  EXPECT_EQ(split_count(192, 16, 64), 3);
  EXPECT_EQ(split_chunk_len(33000, 16, 256), 2304);
}

TEST(SplitKvPolicy, SplitCountFillsOneWaveOfResidentCtas) {
  EXPECT_EQ(decode_num_splits(1, 8, 132), 16);
  EXPECT_EQ(decode_num_splits(16, 8, 132), 1);
  EXPECT_EQ(decode_num_splits(64, 8, 528), 1);
  EXPECT_EQ(decode_num_splits(256, 8, 528), 1);  // never fewer than one
  EXPECT_EQ(decode_num_splits(1, 1, 1000), kMaxSplits);
  EXPECT_EQ(max_split_partial_rows(32, 8, 528), 528 * 4);
}

TEST(SplitKvPolicy, EarlyLaunchOnlyForBatchesOfFewCtas) {
  // 132 SMs and a projection of 4096 rows (256 GEMV blocks) or unknown: at most 16 non-empty
  // CTAs. With 8 KV heads that is 2 splits in all: batch 1 up to two splits, batch 2 one split
  // each; batch 3 never.
  for (int64_t rows : {int64_t{4096}, int64_t{0}}) {
    EXPECT_EQ(decode_early_launch_splits(132, 1, 8, rows), 2);
    EXPECT_EQ(decode_early_launch_splits(132, 2, 8, rows), 2);
    EXPECT_EQ(decode_early_launch_splits(132, 3, 8, rows), 0);
    EXPECT_EQ(decode_early_launch_splits(132, 4, 2, rows), 8);
    EXPECT_EQ(decode_early_launch_splits(132, 1, 32, rows), 0);
  }
}

TEST(SplitKvPolicy, EarlyLaunchForMoreCtasBesideAProjectionOfOneBlockAnSm) {
  // 2048 rows: 128 blocks on 132 SMs. Batch 1: up to 66 CTAs (16 splits of 4 KV heads); above,
  // up to 33 (8 splits of 4 KV heads in all: batch 2 up to 4 splits each, batch 8 one; batch 9
  // never).
  EXPECT_EQ(decode_early_launch_splits(132, 1, 4, 2048), 16);
  EXPECT_EQ(decode_early_launch_splits(132, 2, 4, 2048), 8);
  EXPECT_EQ(decode_early_launch_splits(132, 8, 4, 2048), 8);
  EXPECT_EQ(decode_early_launch_splits(132, 9, 4, 2048), 0);
  // 2128 rows: 133 blocks, more than the SMs.
  EXPECT_EQ(decode_early_launch_splits(132, 1, 4, 2128), 4);
}

}  // namespace
}  // namespace sgl::attention::cuda
