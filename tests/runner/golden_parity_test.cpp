// Golden parity on CPU (f32): greedy ids, per-step top-5 logprobs, teacher-forced top-10
// logprobs and last-position logits against transformers' float32 references, for every dense
// model in ../shared/testdata/golden; and batched generation equal to each request alone.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>

#include "cache/req_to_token_pool.h"
#include "cache/token_to_kv_pool_allocator.h"
#include "engine/batch_generator.h"
#include "runner/forward_batch_builder.h"
#include "runner/model_runner.h"
#include "sampling/sampler.h"
#include "test_data.h"

namespace sgl {
namespace {

#ifdef SGL_TEST_ON_CUDA
// bf16 weights and activations with f32 accumulation.
const Device kDevice = Device::cuda(0);
constexpr double kLogprobTol = 2e-2;
constexpr double kLogitTol = 0.15;
// Random-weight models have near-ties: a greedy divergence is tolerated only at a step where
// the reference's top-2 logprobs are closer than this (and the rest of that case is skipped).
constexpr double kTieTol = 2 * kLogprobTol;
#else
const Device kDevice = Device::cpu();
constexpr double kLogprobTol = 1e-3;  // the bound; f32 lands near 1e-5
constexpr double kLogitTol = 2e-3;    // absolute, on raw last-position logits
constexpr double kTieTol = 0;         // f32: no divergence tolerated
#endif

std::unique_ptr<runner::ModelRunner> make_runner(const std::string& model) {
  runner::ModelRunnerOptions options;
  options.device = kDevice;
  options.max_num_tokens = 512;
  options.max_batch_size = 16;
  options.num_kv_slots = 4096;
  auto r = runner::ModelRunner::create(test::model_dir(model), options);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : nullptr;
}

engine::GenerateRequest greedy_request(const nlohmann::json& c, int32_t top_logprobs) {
  engine::GenerateRequest r;
  r.input_ids = c["prompt_ids"].get<std::vector<int32_t>>();
  r.max_new_tokens = static_cast<int32_t>(c["greedy_ids"].size());
  r.sampling.temperature = 0.f;
  r.ignore_eos = true;  // the goldens do not stop at EOS
  r.top_logprobs_num = top_logprobs;
  r.return_logprob = true;
  return r;
}

// Each golden (id, logprob) is found among ours with a logprob within tol. The last rank may
// swap with a runner-up that is within tol of it.
void expect_top_logprobs(const std::vector<sampling::TokenLogprob>& ours, const nlohmann::json& ids,
                         const nlohmann::json& logprobs, const std::string& where) {
  std::map<int32_t, float> by_id;
  for (const auto& e : ours) by_id[e.id] = e.logprob;
  for (size_t k = 0; k < ids.size(); ++k) {
    const int32_t id = ids[k];
    const double ref = logprobs[k];
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      ASSERT_EQ(k, ids.size() - 1) << where << ": id " << id << " missing at rank " << k;
      EXPECT_NEAR(ours.back().logprob, ref, kLogprobTol) << where << ": swapped last rank";
      continue;
    }
    EXPECT_NEAR(it->second, ref, kLogprobTol) << where << ": id " << id << " rank " << k;
  }
}

class GoldenParity : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenParity, GreedyIdsAndStepLogprobs) {
  const nlohmann::json golden = test::golden(GetParam());
  auto runner = make_runner(GetParam());
  ASSERT_TRUE(runner);
  engine::BatchGenerator generator(*runner, runner->config().eos_token_ids);
  for (size_t ci = 0; ci < golden["cases"].size(); ++ci) {
    const nlohmann::json& c = golden["cases"][ci];
    auto results = generator.generate({greedy_request(c, 5)});
    ASSERT_TRUE(results.ok()) << results.status().to_string();
    const auto& out = results->at(0);
    const auto expected = c["greedy_ids"].get<std::vector<int32_t>>();
    ASSERT_EQ(out.top_logprobs.size(), c["steps_top5"].size());
    size_t agree = 0;  // steps before a tolerated divergence
    while (agree < expected.size() && out.output_ids[agree] == expected[agree]) ++agree;
    if (agree < expected.size()) {
      const auto& lp = c["steps_top5"][agree]["logprobs"];
      const double gap = lp[0].get<double>() - lp[1].get<double>();
      EXPECT_LT(gap, kTieTol) << "case " << ci << ": greedy ids diverge at step " << agree
                              << " where the reference's top-2 gap is " << gap;
      std::cout << "case " << ci << ": tolerated near-tie divergence at step " << agree << " (gap "
                << gap << ")\n";
    }
    for (size_t s = 0; s < agree; ++s) {
      expect_top_logprobs(out.top_logprobs[s], c["steps_top5"][s]["ids"],
                          c["steps_top5"][s]["logprobs"],
                          "case " + std::to_string(ci) + " step " + std::to_string(s));
    }
  }
  EXPECT_TRUE(generator.kv_allocator().check_integrity().ok());
  EXPECT_EQ(generator.kv_allocator().available(), generator.kv_allocator().capacity());
}

TEST_P(GoldenParity, TeacherForcedLogprobsAndLastLogits) {
  const nlohmann::json golden = test::golden(GetParam());
  auto runner = make_runner(GetParam());
  ASSERT_TRUE(runner);
  cache::ReqToTokenPool req_to_token(4, static_cast<int32_t>(runner->context_length()));
  cache::TokenToKvPoolAllocator kv(static_cast<int32_t>(runner->num_kv_slots()));
  runner::ForwardBatchBuilder builder(runner->allocator(), 512, 16, req_to_token);
  for (size_t ci = 0; ci < golden["cases"].size(); ++ci) {
    const nlohmann::json& c = golden["cases"][ci];
    // stories260K's prefill scores the prompt plus 16 generated tokens.
    std::vector<int32_t> ids = c["prompt_ids"].get<std::vector<int32_t>>();
    const size_t positions = c["prefill"]["topk_ids"].size();
    const auto greedy = c["greedy_ids"].get<std::vector<int32_t>>();
    for (size_t i = 0; ids.size() < positions; ++i) ids.push_back(greedy[i]);
    ASSERT_EQ(ids.size(), positions);

    const int32_t row = *req_to_token.alloc();
    const std::vector<int32_t> slots = *kv.alloc(static_cast<int32_t>(ids.size()));
    req_to_token.write(row, 0, slots);
    const runner::BatchRequest request{row, 0, ids, slots};
    const ForwardBatch fb = builder.build(ForwardMode::kExtend, LogitsMode::kAllTokens,
                                          std::span(&request, 1), runner->stream());
    const Tensor logits = runner->forward_logits(fb);
    const int64_t vocab = logits.size(1);
    for (size_t p = 0; p < positions; ++p) {
      const auto top = sampling::top_logprobs_of(logits.data<float>() + p * vocab, vocab, 10);
      expect_top_logprobs(top, c["prefill"]["topk_ids"][p], c["prefill"]["topk_logprobs"][p],
                          "case " + std::to_string(ci) + " position " + std::to_string(p));
    }
    const auto& last = c["prefill"]["last_logits"];
    ASSERT_EQ(static_cast<int64_t>(last.size()), vocab);
    const float* ours = logits.data<float>() + (positions - 1) * vocab;
    double max_err = 0;
    for (int64_t v = 0; v < vocab; ++v) {
      max_err = std::max(max_err, std::abs(ours[v] - last[v].get<double>()));
    }
    EXPECT_LT(max_err, kLogitTol) << "case " << ci;
    kv.free(slots);
    req_to_token.free(row);
  }
}

TEST_P(GoldenParity, BatchEqualsEachAlone) {
  const nlohmann::json golden = test::golden(GetParam());
  auto runner = make_runner(GetParam());
  ASSERT_TRUE(runner);
  engine::BatchGenerator generator(*runner, runner->config().eos_token_ids);
  std::vector<engine::GenerateRequest> requests;
  for (const auto& c : golden["cases"]) requests.push_back(greedy_request(c, 5));
  // A sampled request rides along: its seeded draws must not depend on the batch either.
  engine::GenerateRequest sampled = requests[0];
  sampled.sampling.temperature = 0.8f;
  sampled.sampling.top_p = 0.9f;
  sampled.sampling.seed = 1234;
  requests.push_back(sampled);

  auto together = generator.generate(requests);
  ASSERT_TRUE(together.ok()) << together.status().to_string();
  for (size_t i = 0; i < requests.size(); ++i) {
    auto alone = generator.generate({requests[i]});
    ASSERT_TRUE(alone.ok());
    ASSERT_EQ(alone->at(0).output_logprobs.size(), alone->at(0).output_ids.size());
    // GPU GEMMs may pick other kernels (summation orders) per batch size: compare up to the
    // first near-tie divergence there.
    const auto& a = together->at(i).output_ids;
    const auto& b = alone->at(0).output_ids;
    size_t same = 0;
    while (same < a.size() && same < b.size() && a[same] == b[same]) ++same;
    if (kTieTol == 0) {
      EXPECT_EQ(a, b) << "request " << i;
    } else if (same < b.size()) {
      std::cout << "request " << i << ": batched run diverges at step " << same << "\n";
    }
    for (size_t s = 0; s < same; ++s) {
      EXPECT_NEAR(together->at(i).output_logprobs[s], alone->at(0).output_logprobs[s],
                  kTieTol == 0 ? 1e-4 : kLogprobTol);
    }
  }
  EXPECT_TRUE(generator.kv_allocator().check_integrity().ok());
  EXPECT_TRUE(generator.req_to_token_pool().check_integrity().ok());
}

INSTANTIATE_TEST_SUITE_P(DenseModels, GoldenParity,
                         ::testing::Values("stories260K", "tiny-llama", "tiny-llama-tied",
                                           "tiny-qwen2", "tiny-qwen3"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::erase(name, '-');
                           return name;
                         });

}  // namespace
}  // namespace sgl
