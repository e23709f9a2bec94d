// --kv-cache-dtype fp8_e4m3 / fp8_e5m2 on the golden dense models, against the same runner with
// its KV cache in the compute dtype: teacher-forced next-token probabilities within a stated
// bound (and not equal: the cache really is FP8), and greedy decoding, which reads back the codes
// the decode steps stored, near a teacher-forced prefill of its own ids, which reads the codes
// the prefill stored. CPU f32 here; fp8_kv_cache_cuda_test: CUDA bf16 (the flash kernels' FP8
// path).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "../model/runner_test_util.h"
#include "engine/batch_generator.h"
#include "runner/model_runner.h"
#include "sampling/sampler.h"
#include "test_data.h"
#include "top_logprobs_check.h"

namespace sgl {
namespace {

#ifdef SGL_TEST_ON_CUDA
const Device kDevice = Device::cuda(0);
const char* const kDtype = "bfloat16";
#else
const Device kDevice = Device::cpu();
const char* const kDtype = "float32";
#endif

// Greedy steps against the teacher-forced prefill: both read back the codes they stored, but a K
// or V value the prefill's GEMM and a decode step's GEMV compute a few bits apart rounds a whole
// FP8 step apart where it lies on a rounding boundary (E5M2: up to 25%), and bf16 activations
// widen those differences. Measured on stories260K (the others stay within 0.015): the CPU in
// f32 6e-5 with E5M2 in the release build and 0.12 in the ASan build (another summation order);
// an H100 in bf16 0.077 with E4M3 and 0.23 with E5M2 (its bf16 golden bound is 0.27 without
// FP8).
double self_consistency(const std::string& format) { return format == "fp8_e4m3" ? 0.12 : 0.35; }

// How far an FP8 cache may move the next-token distribution from the compute dtype's cache:
// the mean over every position of the largest |p_fp8 - p| among the reference's top 10 tokens.
// E4M3 rounds each K and V value to 3 mantissa bits (relative error <= 2^-4), E5M2 to 2 (<= 2^-3).
// Measured on the CPU in f32 (the worst position's difference in brackets): stories260K, a
// trained model with head_dim 8 and keys up to 26 (no saturation), E4M3 0.028 (0.22), E5M2 0.059
// (0.50); the random models E4M3 0.0007-0.0009 (0.004), E5M2 0.0014-0.0016 (0.006). The bounds
// are about twice those. (Logprobs of the tail tokens move much more, by up to 1.9 on
// stories260K at probabilities of 1e-5, which is why the bound is on probabilities.)
double fp8_bound(const std::string& model, const std::string& format) {
  const bool e4m3 = format == "fp8_e4m3";
  if (model == "stories260K") return e4m3 ? 0.06 : 0.12;
  return e4m3 ? 0.002 : 0.004;
}

std::unique_ptr<runner::ModelRunner> make_runner(const std::string& model,
                                                 const std::string& kv_cache_dtype) {
  runner::ModelRunnerOptions options;
  options.device = kDevice;
  options.dtype = kDtype;
  options.kv_cache_dtype = kv_cache_dtype;
  options.max_num_tokens = 512;
  options.max_batch_size = 16;
  options.num_kv_slots = 4096;
  auto r = runner::ModelRunner::create(test::model_dir(model), options);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : nullptr;
}

// Each position's top-10 logprobs of one prefill over `ids`.
std::vector<std::vector<sampling::TokenLogprob>> teacher_forced(runner::ModelRunner& runner,
                                                                const std::vector<int32_t>& ids) {
  const std::vector<float> logits = model::test_util::prefill_logits(runner, ids);
  const auto vocab = static_cast<int64_t>(logits.size() / ids.size());
  std::vector<std::vector<sampling::TokenLogprob>> out;
  for (size_t p = 0; p < ids.size(); ++p) {
    out.push_back(sampling::top_logprobs_of(logits.data() + p * vocab, vocab, 10));
  }
  return out;
}

// The largest |difference| of probabilities over the reference's ids that ours also has.
double max_probability_difference(const std::vector<sampling::TokenLogprob>& ours,
                                  const std::vector<sampling::TokenLogprob>& reference) {
  double worst = 0;
  for (const auto& r : reference) {
    for (const auto& o : ours) {
      if (o.id == r.id) {
        worst = std::max(worst, std::abs(std::exp(double{o.logprob}) - std::exp(r.logprob)));
      }
    }
  }
  return worst;
}

nlohmann::json as_json_ids(const std::vector<sampling::TokenLogprob>& top) {
  nlohmann::json ids = nlohmann::json::array();
  for (const auto& e : top) ids.push_back(e.id);
  return ids;
}
nlohmann::json as_json_logprobs(const std::vector<sampling::TokenLogprob>& top) {
  nlohmann::json lp = nlohmann::json::array();
  for (const auto& e : top) lp.push_back(e.logprob);
  return lp;
}

using Fp8Case = std::tuple<std::string, std::string>;  // model, --kv-cache-dtype

class Fp8KvCache : public ::testing::TestWithParam<Fp8Case> {};

TEST_P(Fp8KvCache, NextTokenProbabilitiesNearTheComputeDtypesCache) {
  const auto& [model, format] = GetParam();
  auto fp8 = make_runner(model, format);
  auto plain = make_runner(model, "auto");
  ASSERT_TRUE(fp8 && plain);
  EXPECT_EQ(fp8->kv_cache_dtype(), format == "fp8_e4m3" ? DType::kF8E4M3 : DType::kF8E5M2);
  EXPECT_EQ(fp8->compute_dtype(), plain->compute_dtype());
  EXPECT_EQ(plain->kv_cache_dtype(), plain->compute_dtype());
  const nlohmann::json golden = test::golden(model);
  double worst = 0, total = 0;
  int64_t positions = 0;
  for (const nlohmann::json& c : golden["cases"]) {
    std::vector<int32_t> ids = c["prompt_ids"].get<std::vector<int32_t>>();
    for (int32_t id : c["greedy_ids"]) ids.push_back(id);
    const auto ours = teacher_forced(*fp8, ids);
    const auto reference = teacher_forced(*plain, ids);
    for (size_t p = 0; p < ids.size(); ++p) {
      const double difference = max_probability_difference(ours[p], reference[p]);
      worst = std::max(worst, difference);
      total += difference;
      ++positions;
    }
  }
  const double mean = total / static_cast<double>(positions);
  std::cout << model << " " << format << ": next-token probabilities within " << mean
            << " of the compute dtype's cache on average, " << worst << " at worst\n";
  EXPECT_LT(mean, fp8_bound(model, format));
  // The first position attends to itself alone (its softmax is 1 whatever the key), so only
  // later positions can differ; a cache that kept the compute dtype would differ nowhere.
  EXPECT_GT(worst, 1e-4) << "an FP8 cache should move the probabilities";
}

TEST_P(Fp8KvCache, GreedyDecodeReadsWhatItStored) {
  const auto& [model, format] = GetParam();
  auto runner = make_runner(model, format);
  ASSERT_TRUE(runner);
  engine::BatchGenerator generator(*runner, runner->config().eos_token_ids);
  const nlohmann::json golden = test::golden(model);
  double worst = 0;
  for (size_t ci = 0; ci < golden["cases"].size(); ++ci) {
    const nlohmann::json& c = golden["cases"][ci];
    auto results = generator.generate({test::greedy_request(c, 10)});
    ASSERT_TRUE(results.ok()) << results.status().to_string();
    const auto& out = results->at(0);
    std::vector<int32_t> ids = c["prompt_ids"].get<std::vector<int32_t>>();
    const size_t prompt = ids.size();
    ids.insert(ids.end(), out.output_ids.begin(), out.output_ids.end());
    const auto forced = teacher_forced(*runner, ids);
    ASSERT_EQ(out.top_logprobs.size(), out.output_ids.size());
    for (size_t s = 0; s < out.output_ids.size(); ++s) {
      const auto& at = forced[prompt - 1 + s];  // the position that predicts output s
      worst = std::max(worst, test::expect_top_logprobs(
                                  out.top_logprobs[s], as_json_ids(at), as_json_logprobs(at),
                                  self_consistency(format),
                                  "case " + std::to_string(ci) + " step " + std::to_string(s)));
    }
  }
  std::cout << model << " " << format << ": decode steps within " << worst
            << " of the teacher-forced prefill\n";
  EXPECT_TRUE(generator.kv_allocator().check_integrity().ok());
}

INSTANTIATE_TEST_SUITE_P(Models, Fp8KvCache,
                         ::testing::Combine(::testing::Values("stories260K", "tiny-llama",
                                                              "tiny-qwen2", "tiny-qwen3"),
                                            ::testing::Values("fp8_e4m3", "fp8_e5m2")),
                         [](const auto& info) {
                           std::string name =
                               std::get<0>(info.param) + "_" + std::get<1>(info.param);
                           std::erase(name, '-');
                           return name;
                         });

TEST(Fp8KvCacheOptions, RefusesWhatItCannotKeep) {
  for (const char* bad : {"fp8", "int8", "fp4_e2m1", "float16"}) {
    runner::ModelRunnerOptions options;
    options.device = kDevice;
    options.dtype = kDtype;
    options.kv_cache_dtype = bad;
    options.num_kv_slots = 64;
    auto r = runner::ModelRunner::create(test::model_dir("stories260K"), options);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--kv-cache-dtype"), std::string::npos)
        << r.status().to_string();
  }
}

}  // namespace
}  // namespace sgl
