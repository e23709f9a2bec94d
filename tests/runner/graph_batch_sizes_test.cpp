// CUDA graph capture sizes: SGLang's default buckets, and --cuda-graph-bs's list cut at the cap.
#include "runner/graph_batch_sizes.h"

#include <gtest/gtest.h>

namespace sgl::runner {
namespace {

using Sizes = std::vector<int32_t>;

TEST(GraphBatchSizes, DefaultBucketsDoubleToEightThenStepByEight) {
  EXPECT_EQ(cuda_graph_batch_sizes(1), (Sizes{1}));
  EXPECT_EQ(cuda_graph_batch_sizes(3), (Sizes{1, 2, 3}));
  EXPECT_EQ(cuda_graph_batch_sizes(8), (Sizes{1, 2, 4, 8}));
  EXPECT_EQ(cuda_graph_batch_sizes(30), (Sizes{1, 2, 4, 8, 16, 24, 30}));
  EXPECT_EQ(cuda_graph_batch_sizes(32), (Sizes{1, 2, 4, 8, 16, 24, 32}));
  EXPECT_EQ(graph_batch_sizes({}, 32), cuda_graph_batch_sizes(32));
  EXPECT_TRUE(graph_batch_sizes({}, 0).empty());
}

TEST(GraphBatchSizes, AListIsSortedDeduplicatedAndCutAtTheCap) {
  EXPECT_EQ(graph_batch_sizes({1, 2, 4, 8, 12, 160}, 160), (Sizes{1, 2, 4, 8, 12, 160}));
  EXPECT_EQ(graph_batch_sizes({16, 1, 16, 3}, 256), (Sizes{1, 3, 16}));
  // The caps (max_batch_size, a verify pass's rows) leave the larger sizes out, not rounded.
  EXPECT_EQ(graph_batch_sizes({1, 2, 48, 64}, 40), (Sizes{1, 2}));
  EXPECT_TRUE(graph_batch_sizes({64}, 40).empty());
  EXPECT_TRUE(graph_batch_sizes({1, 2}, 0).empty());
}

}  // namespace
}  // namespace sgl::runner
