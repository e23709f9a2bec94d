// Tensor-parallel loading: each rank reads only its shard of every split tensor (counted in file
// bytes) and whole copies of the replicated ones (norms, routers, KV heads shared by ranks), and
// the shard arithmetic on stored bytes (row ranges, column ranges at whole quant blocks). Under
// expert parallelism a rank reads only its group's experts, and of those its share of the rows.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/allocator.h"
#include "expected_shard_bytes.h"
#include "model/expert_parallel.h"
#include "model/model_config.h"
#include "model/model_registry.h"
#include "model/tensor_parallel.h"
#include "model/weight_loader.h"
#include "model/weight_source.h"
#include "model_test_util.h"

namespace sgl::model {
namespace {

using test_util::expect_status;
using test_util::testdata_models_dir;

class RankReads : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(RankReads, OnlyItsShard) {
  const auto& [model, tp] = GetParam();
  const auto dir = testdata_models_dir() / model;
  auto source = SafetensorsWeightSource::open(dir);
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  auto config = load_model_config(dir);
  ASSERT_TRUE(config.ok());
  uint64_t whole = 0, expected = 0;
  for (const std::string& name : (*source)->names()) {
    const uint64_t bytes = *(*source)->stored_nbytes(name);
    whole += bytes;
    expected += expected_bytes(name, bytes, *config, tp);
  }
  CpuAllocator allocator;
  for (int rank = 0; rank < tp; ++rank) {
    WeightLoader weights(source->get(), allocator, DType::kF32, backend::Stream::cpu());
    ModelOptions options;
    options.max_num_tokens = 16;
    options.max_logit_rows = 4;
    options.tp = {rank, tp};
    auto m = create_model(*config, weights, allocator, options);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(weights.bytes_read(), expected) << model << " rank " << rank << " of " << tp;
    EXPECT_LT(weights.bytes_read(), whole / 2 + whole / 4);
  }
}

struct EpLoadCase {
  std::string model;
  int tp;
  int ep;
};

std::string ep_load_case_name(const ::testing::TestParamInfo<EpLoadCase>& info) {
  std::string name = info.param.model + "_tp" + std::to_string(info.param.tp) + "_ep" +
                     std::to_string(info.param.ep);
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

class RankReadsExperts : public ::testing::TestWithParam<EpLoadCase> {};

TEST_P(RankReadsExperts, OnlyItsExperts) {
  const auto& [model, tp, ep] = GetParam();
  const auto dir = testdata_models_dir() / model;
  auto source = SafetensorsWeightSource::open(dir);
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  auto config = load_model_config(dir);
  ASSERT_TRUE(config.ok());
  CpuAllocator allocator;
  uint64_t experts_read = 0;  // over the ranks: every expert's bytes once
  uint64_t experts_stored = 0;
  for (const std::string& name : (*source)->names()) {
    if (name.find(".experts.") != std::string::npos) {
      experts_stored += *(*source)->stored_nbytes(name);
    }
  }
  for (int rank = 0; rank < tp; ++rank) {
    uint64_t expected = 0;
    for (const std::string& name : (*source)->names()) {
      const uint64_t bytes = *(*source)->stored_nbytes(name);
      expected += expected_ep_bytes(name, bytes, *config, rank, tp, ep);
      if (name.find(".experts.") != std::string::npos) {
        experts_read += expected_ep_bytes(name, bytes, *config, rank, tp, ep);
      }
    }
    WeightLoader weights(source->get(), allocator, DType::kF32, backend::Stream::cpu());
    ModelOptions options;
    options.max_num_tokens = 16;
    options.max_logit_rows = 4;
    options.tp = {rank, tp};
    options.ep_size = ep;
    auto m = create_model(*config, weights, allocator, options);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(weights.bytes_read(), expected)
        << model << " rank " << rank << " of tp " << tp << " ep " << ep;
    // Other groups' experts are left on purpose: nothing is reported unread.
    EXPECT_EQ(weights.unread_tensors(), std::vector<std::string>{}) << model << " rank " << rank;
  }
  EXPECT_EQ(experts_read, experts_stored);
}

INSTANTIATE_TEST_SUITE_P(
    Models, RankReadsExperts,
    ::testing::Values(EpLoadCase{"tiny-mixtral", 2, 2}, EpLoadCase{"tiny-mixtral", 4, 4},
                      EpLoadCase{"tiny-qwen2-moe", 2, 2}, EpLoadCase{"tiny-qwen2-moe", 4, 2},
                      EpLoadCase{"tiny-qwen3-moe", 4, 4}, EpLoadCase{"tiny-qwen3-moe", 4, 2}),
    ep_load_case_name);

INSTANTIATE_TEST_SUITE_P(Models, RankReads,
                         ::testing::Combine(::testing::Values("tiny-llama", "tiny-qwen2",
                                                              "tiny-qwen2-moe", "stories260K"),
                                            ::testing::Values(2, 4)),
                         [](const auto& info) {
                           std::string name = std::get<0>(info.param) + "_tp" +
                                              std::to_string(std::get<1>(info.param));
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(TensorSliceTest, NarrowsRowsAndColumns) {
  const std::vector<int64_t> full = {4, 64};
  StoredTensor f32{kernels::StoredFormat::kF32, reinterpret_cast<const uint8_t*>(0x1000), 4, 256};
  auto rows = narrow_stored(f32, full, {.dim = 0, .start = 1, .size = 2}, "w");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->rows, 2);
  EXPECT_EQ(rows->data, f32.data + 256);
  EXPECT_EQ(rows->stride(), 256u);
  auto cols = narrow_stored(f32, full, {.dim = 1, .start = 16, .size = 32}, "w");
  ASSERT_TRUE(cols.ok());
  EXPECT_EQ(cols->rows, 4);
  EXPECT_EQ(cols->data, f32.data + 64);
  EXPECT_EQ(cols->row_bytes, 128u);
  EXPECT_EQ(cols->stride(), 256u);
  // Reordered rows (GGUF's un-permuted q/k) keep their order within the range.
  StoredTensor permuted = f32;
  permuted.row_order = {3, 1, 2, 0};
  auto some = narrow_stored(permuted, full, {.dim = 0, .start = 2, .size = 2}, "w");
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(some->row_order, (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(some->data, f32.data);

  // Q8_0: 32 values in 34 bytes; columns cut at whole blocks only.
  StoredTensor q8{kernels::StoredFormat::kQ8_0, reinterpret_cast<const uint8_t*>(0x1000), 4, 68};
  auto half = narrow_stored(q8, full, {.dim = 1, .start = 32, .size = 32}, "w");
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(half->data, q8.data + 34);
  EXPECT_EQ(half->row_bytes, 34u);
  EXPECT_EQ(half->stride(), 68u);
  expect_status(narrow_stored(q8, full, {.dim = 1, .start = 16, .size = 16}, "blk.w").status(),
                StatusCode::kInvalidArgument, {"blk.w", "blocks of 32", "splits a block"});
  // A shard outside the tensor, or along a dimension it lacks.
  expect_status(narrow_stored(f32, full, {.dim = 0, .start = 3, .size = 2}, "w").status(),
                StatusCode::kInvalidArgument, {"'w'", "no shard [3, 5)"});
  expect_status(narrow_stored(f32, {256}, {.dim = 1, .start = 0, .size = 2}, "b").status(),
                StatusCode::kInvalidArgument, {"'b'", "along dim 1"});
}

TEST(TensorSliceTest, CopiesF32Slices) {
  std::vector<float> m(12);
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>(i);  // [3, 4]
  std::vector<float> out(6);
  copy_slice_f32(m.data(), {3, 4}, {.dim = 1, .start = 1, .size = 2}, out.data());
  EXPECT_EQ(out, (std::vector<float>{1, 2, 5, 6, 9, 10}));
  out.assign(4, 0);
  copy_slice_f32(m.data(), {3, 4}, {.dim = 0, .start = 2, .size = 1}, out.data());
  EXPECT_EQ(out, (std::vector<float>{8, 9, 10, 11}));
}

}  // namespace
}  // namespace sgl::model
