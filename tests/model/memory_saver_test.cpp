// The memory saver through ModelRunner (--enable-memory-saver): a runner whose weights and KV
// cache live in releasable memory gives the same logits as one that does not; after a release
// and resume with the weights kept on the host, exactly the same logits again; without the
// backup the weights are gone until update_weights_from_disk writes them back; a KV cache's
// contents are gone (a prefix read from it changes) and a new prefill works; the device's free
// memory grows by what was released (CUDA); forward passes, weight updates and reads while
// released are refused. Built with SGL_TEST_ON_CUDA: the same on the GPU in float32.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model_test_util.h"
#include "runner/model_runner.h"
#include "runner_test_util.h"

namespace sgl::model {
namespace {

namespace fs = std::filesystem;
using test_util::max_abs_diff;
using test_util::prefill_logits;
using test_util::testdata_models_dir;

const std::vector<int32_t> kPrompt = {1, 5, 9, 2, 7, 3, 11, 4};
const runner::MemoryKinds kAll{.weights = true, .kv_cache = true};

std::unique_ptr<runner::ModelRunner> make_runner(const fs::path& path, bool memory_saver,
                                                 bool weights_backup = false) {
  runner::ModelRunnerOptions options;
  options.max_num_tokens = 64;
  options.max_batch_size = 4;
  options.num_kv_slots = 4096;
  options.dtype = "float32";
  options.enable_memory_saver = memory_saver;
  options.enable_weights_cpu_backup = weights_backup;
#ifdef SGL_TEST_ON_CUDA
  options.device = Device::cuda(0);
#endif
  auto r = runner::ModelRunner::create(path, options);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : nullptr;
}

// The logits of kPrompt's second half extended over its first half's KV (two passes: the second
// reads the KV cache the first wrote), or, with `release_between`, with the KV cache released
// and resumed between the two.
std::vector<float> extend_over_cached_prefix(runner::ModelRunner& runner, bool release_between) {
  cache::ReqToTokenPool req_to_token(2, static_cast<int32_t>(runner.context_length()));
  cache::TokenToKvPoolAllocator kv(static_cast<int32_t>(runner.num_kv_slots()));
  runner::ForwardBatchBuilder builder(runner.allocator(), 64, 4, req_to_token.table());
  const int32_t row = *req_to_token.alloc();
  const std::vector<int32_t> slots = *kv.alloc(static_cast<int32_t>(kPrompt.size()));
  req_to_token.write(row, 0, slots);
  const size_t half = kPrompt.size() / 2;
  const std::span<const int32_t> ids(kPrompt), where(slots);
  const runner::BatchRequest first{row, 0, ids.first(half), where.first(half)};
  runner.forward_logits(builder.build(ForwardMode::kExtend, LogitsMode::kAllTokens,
                                      std::span(&first, 1), runner.stream()));
  if (release_between) {
    EXPECT_TRUE(runner.release_memory({.kv_cache = true}).ok());
    EXPECT_TRUE(runner.resume_memory({.kv_cache = true}).ok());
  }
  const runner::BatchRequest second{row, static_cast<int32_t>(half), ids.subspan(half),
                                    where.subspan(half)};
  const Tensor logits = runner.forward_logits(builder.build(
      ForwardMode::kExtend, LogitsMode::kAllTokens, std::span(&second, 1), runner.stream()));
  const float* p = logits.data<float>();
  return std::vector<float>(p, p + logits.numel());
}

class MemorySaver : public ::testing::TestWithParam<const char*> {
 protected:
  fs::path model() const { return testdata_models_dir() / GetParam(); }
};

TEST_P(MemorySaver, ReleasableMemoryChangesNoLogit) {
  auto plain = make_runner(model(), false);
  auto saver = make_runner(model(), true);
  ASSERT_TRUE(plain && saver);
  EXPECT_EQ(max_abs_diff(prefill_logits(*saver, kPrompt), prefill_logits(*plain, kPrompt)), 0.0);
  EXPECT_EQ(max_abs_diff(extend_over_cached_prefix(*saver, false),
                         extend_over_cached_prefix(*plain, false)),
            0.0);
}

TEST_P(MemorySaver, KeptWeightsGiveTheSameLogitsAfterTheResume) {
  auto runner = make_runner(model(), true, /*weights_backup=*/true);
  ASSERT_TRUE(runner);
  const std::vector<float> before = prefill_logits(*runner, kPrompt);
#ifdef SGL_TEST_ON_CUDA
  const size_t free_before = backend::memory_info(runner->options().device)->free_bytes;
#endif
  Result<size_t> released = runner->release_memory(kAll);
  ASSERT_TRUE(released.ok()) << released.status().to_string();
  EXPECT_GT(*released, 0u);
  EXPECT_TRUE(runner->released_memory().weights && runner->released_memory().kv_cache);
#ifdef SGL_TEST_ON_CUDA
  // The driver has the memory back.
  const size_t free_released = backend::memory_info(runner->options().device)->free_bytes;
  EXPECT_GE(free_released, free_before + *released * 9 / 10)
      << "released " << *released << " bytes; free " << free_before << " -> " << free_released;
#endif
  EXPECT_EQ(*runner->release_memory(kAll), 0u) << "released twice";
  ASSERT_TRUE(runner->resume_memory(kAll).ok());
  EXPECT_FALSE(runner->released_memory().weights || runner->released_memory().kv_cache);
  EXPECT_EQ(max_abs_diff(prefill_logits(*runner, kPrompt), before), 0.0);
}

TEST_P(MemorySaver, WeightsNotKeptComeBackWithAnUpdateFromDisk) {
  auto runner = make_runner(model(), true);
  ASSERT_TRUE(runner);
  const std::vector<float> before = prefill_logits(*runner, kPrompt);
  ASSERT_TRUE(runner->release_memory({.weights = true}).ok());
  EXPECT_FALSE(runner->released_memory().kv_cache);
  test_util::expect_status(runner->update_weights_from_disk(model()), StatusCode::kInvalidArgument,
                           {"weights' memory is released"});
  test_util::expect_status(runner->read_weight("model.norm.weight").status(),
                           StatusCode::kInvalidArgument, {"weights' memory is released"});
  ASSERT_TRUE(runner->resume_memory({.weights = true}).ok());
#ifndef SGL_TEST_ON_CUDA
  // The host's fresh pages are zeros (a GPU's fresh memory holds whatever it holds).
  EXPECT_GT(max_abs_diff(prefill_logits(*runner, kPrompt), before), 0.0);
#endif
  ASSERT_TRUE(runner->update_weights_from_disk(model()).ok());
  EXPECT_EQ(max_abs_diff(prefill_logits(*runner, kPrompt), before), 0.0);
}

TEST_P(MemorySaver, AReleasedKvCacheLosesItsContentsAndServesNewPrefills) {
  auto runner = make_runner(model(), true);
  ASSERT_TRUE(runner);
  const std::vector<float> cached = extend_over_cached_prefix(*runner, false);
#ifndef SGL_TEST_ON_CUDA
  EXPECT_GT(max_abs_diff(extend_over_cached_prefix(*runner, true), cached), 0.0)
      << "the prefix's KV survived the release";
#endif
  EXPECT_EQ(max_abs_diff(extend_over_cached_prefix(*runner, false), cached), 0.0);
}

TEST_P(MemorySaver, ReleasingWithoutTheFlagIsRefused) {
  auto runner = make_runner(model(), false);
  ASSERT_TRUE(runner);
  test_util::expect_status(runner->release_memory(kAll).status(), StatusCode::kInvalidArgument,
                           {"--enable-memory-saver"});
  test_util::expect_status(runner->resume_memory(kAll), StatusCode::kInvalidArgument,
                           {"--enable-memory-saver"});
}

using MemorySaverDeathTest = MemorySaver;

TEST_P(MemorySaverDeathTest, AForwardWhileReleasedIsABug) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto runner = make_runner(model(), true);
  ASSERT_TRUE(runner);
  ASSERT_TRUE(runner->release_memory({.kv_cache = true}).ok());
  EXPECT_DEATH(prefill_logits(*runner, kPrompt), "while the memory is released");
  ASSERT_TRUE(runner->resume_memory({.kv_cache = true}).ok());
}

// Dense with a tied LM head, and MoE with stacked experts and a shared expert.
INSTANTIATE_TEST_SUITE_P(Models, MemorySaver,
                         ::testing::Values("tiny-llama-tied", "tiny-qwen3", "tiny-qwen2-moe"));
INSTANTIATE_TEST_SUITE_P(Models, MemorySaverDeathTest, ::testing::Values("tiny-llama"));

}  // namespace
}  // namespace sgl::model
