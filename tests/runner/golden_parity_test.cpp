// Golden parity on CPU (f32): greedy ids, per-step top-5 logprobs, teacher-forced top-10
// logprobs and last-position logits against transformers' float32 references, for every model in
// ../shared/testdata/golden (dense and MoE); and batched generation equal to each request alone.
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
#include "top_logprobs_check.h"

namespace sgl {
namespace {

// Three regimes from one source: CPU f32 (golden_parity_test), CUDA f32
// (golden_parity_cuda_f32_test: the same math on our GPU kernels, the same bounds as the CPU) and
// CUDA bf16 (golden_parity_cuda_test).
#ifdef SGL_TEST_ON_CUDA
const Device kDevice = Device::cuda(0);
#else
const Device kDevice = Device::cpu();
#endif
#if defined(SGL_TEST_ON_CUDA) && !defined(SGL_TEST_DTYPE_F32)
constexpr bool kBf16 = true;
#else
constexpr bool kBf16 = false;
#endif

struct Tolerances {
  double step_logprob = 1e-3;     // per-step top-5 logprobs (the f32 bound)
  double prefill_logprob = 1e-3;  // teacher-forced top-10 logprobs
  double logit = 2e-3;            // absolute, on raw last-position logits
  // Random-weight models have near-ties: a greedy divergence is tolerated only at a step where
  // the reference's top-2 logprobs are closer than this (and the rest of that case is skipped).
  double tie = 0;
};

// f32: the bounds above. bf16: the goldens are f32 math, and bf16 math moves these tiny models'
// logprobs by more than the 2e-2 even in transformers (measured by
// scripts/measure_transformers_bf16_error.py into data/transformers_bf16_error.json: up to 0.18
// on stories260K, 0.03-0.07 on the random dense models). We are held to max(2e-2, 1.5 x
// transformers' own bf16 error) per model. NOTE: on the MoE models that error is 0.09-2.0 on
// logprobs (last logits: 0.03-0.05): bf16 activations flip the router's choice at near-tied
// experts (transformers with an f32 router measured the same); they are left out here in bf16
// (see the model list at the end) and checked by moe_routing_test.
Tolerances tolerances_for(const std::string& model) {
  Tolerances t;
  if (!kBf16) return t;
  const nlohmann::json measured = test::read_json(sgl::test::test_data_dir("runner") /
                                                  "transformers_bf16_error.json")["models"][model];
  t.step_logprob = std::max(2e-2, 1.5 * measured["step_top5_logprob"].get<double>());
  t.prefill_logprob = std::max(2e-2, 1.5 * measured["prefill_top10_logprob"].get<double>());
  t.logit = std::max(0.15, 1.5 * measured["last_logits"].get<double>());
  t.tie = 2 * t.step_logprob;
  return t;
}

// The reference each model is held to. With bf16 weights stories260K (a float32 checkpoint) is
// compared with its golden recomputed on bf16-rounded weights (scripts/make_bf16_weight_golden.py),
// the regime of the other goldens; rounding its weights alone moves logprobs by up to 0.1 and
// changes one case's greedy ids.
nlohmann::json golden_for(const std::string& model) {
  if (kBf16 && model == "stories260K") {
    return test::read_json(sgl::test::test_data_dir("runner") / "stories260K-bf16-weights.json");
  }
  return test::golden(model);
}

std::unique_ptr<runner::ModelRunner> make_runner(const std::string& model,
                                                 bool disable_cuda_graph = false) {
  runner::ModelRunnerOptions options;
  options.device = kDevice;
  options.disable_cuda_graph = disable_cuda_graph;
  options.dtype = kBf16 ? "bfloat16" : "float32";
  options.max_num_tokens = 512;
  options.max_batch_size = 16;
  options.num_kv_slots = 4096;
  auto r = runner::ModelRunner::create(test::model_dir(model), options);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : nullptr;
}

class GoldenParity : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenParity, GreedyIdsAndStepLogprobs) {
  const nlohmann::json golden = golden_for(GetParam());
  const Tolerances tol = tolerances_for(GetParam());
  auto runner = make_runner(GetParam());
  ASSERT_TRUE(runner);
  engine::BatchGenerator generator(*runner, runner->config().eos_token_ids);
  double worst = 0;  // the largest step logprob error, reported
  for (size_t ci = 0; ci < golden["cases"].size(); ++ci) {
    const nlohmann::json& c = golden["cases"][ci];
    auto results = generator.generate({test::greedy_request(c, 5)});
    ASSERT_TRUE(results.ok()) << results.status().to_string();
    const auto& out = results->at(0);
    const auto expected = c["greedy_ids"].get<std::vector<int32_t>>();
    ASSERT_EQ(out.top_logprobs.size(), c["steps_top5"].size());
    size_t agree = 0;  // steps before a tolerated divergence
    while (agree < expected.size() && out.output_ids[agree] == expected[agree]) ++agree;
    if (agree < expected.size()) {
      const auto& lp = c["steps_top5"][agree]["logprobs"];
      const double gap = lp[0].get<double>() - lp[1].get<double>();
      EXPECT_LT(gap, tol.tie) << "case " << ci << ": greedy ids diverge at step " << agree
                              << " where the reference's top-2 gap is " << gap;
      std::cout << "case " << ci << ": tolerated near-tie divergence at step " << agree << " (gap "
                << gap << ")\n";
    }
    for (size_t s = 0; s < agree; ++s) {
      worst = std::max(worst, test::expect_top_logprobs(
                                  out.top_logprobs[s], c["steps_top5"][s]["ids"],
                                  c["steps_top5"][s]["logprobs"], tol.step_logprob,
                                  "case " + std::to_string(ci) + " step " + std::to_string(s)));
    }
  }
  std::cout << GetParam() << ": step top-5 logprobs within " << worst << "\n";
  EXPECT_TRUE(generator.kv_allocator().check_integrity().ok());
  EXPECT_EQ(generator.kv_allocator().available(), generator.kv_allocator().capacity());
}

TEST_P(GoldenParity, TeacherForcedLogprobsAndLastLogits) {
  const nlohmann::json golden = golden_for(GetParam());
  const Tolerances tol = tolerances_for(GetParam());
  auto runner = make_runner(GetParam());
  ASSERT_TRUE(runner);
  cache::ReqToTokenPool req_to_token(4, static_cast<int32_t>(runner->context_length()));
  cache::TokenToKvPoolAllocator kv(static_cast<int32_t>(runner->num_kv_slots()));
  runner::ForwardBatchBuilder builder(runner->allocator(), 512, 16, req_to_token.table());
  double worst_logprob = 0, worst_logit = 0;  // reported
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
      worst_logprob = std::max(
          worst_logprob, test::expect_top_logprobs(
                             top, c["prefill"]["topk_ids"][p], c["prefill"]["topk_logprobs"][p],
                             tol.prefill_logprob,
                             "case " + std::to_string(ci) + " position " + std::to_string(p)));
    }
    const auto& last = c["prefill"]["last_logits"];
    ASSERT_EQ(static_cast<int64_t>(last.size()), vocab);
    const float* ours = logits.data<float>() + (positions - 1) * vocab;
    double max_err = 0;
    for (int64_t v = 0; v < vocab; ++v) {
      max_err = std::max(max_err, std::abs(ours[v] - last[v].get<double>()));
    }
    EXPECT_LT(max_err, tol.logit) << "case " << ci;
    worst_logit = std::max(worst_logit, max_err);
    kv.free(slots);
    req_to_token.free(row);
  }
  std::cout << GetParam() << ": teacher-forced top-10 logprobs within " << worst_logprob
            << ", last logits within " << worst_logit << "\n";
}

TEST_P(GoldenParity, BatchEqualsEachAlone) {
  const nlohmann::json golden = golden_for(GetParam());
  const Tolerances tol = tolerances_for(GetParam());
  auto runner = make_runner(GetParam());
  ASSERT_TRUE(runner);
  engine::BatchGenerator generator(*runner, runner->config().eos_token_ids);
  std::vector<engine::GenerateRequest> requests;
  for (const auto& c : golden["cases"]) requests.push_back(test::greedy_request(c, 5));
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
    if (tol.tie == 0) {
      EXPECT_EQ(a, b) << "request " << i;
    } else if (same < b.size()) {
      std::cout << "request " << i << ": batched run diverges at step " << same << "\n";
    }
    for (size_t s = 0; s < same; ++s) {
      EXPECT_NEAR(together->at(i).output_logprobs[s], alone->at(0).output_logprobs[s],
                  tol.tie == 0 ? 1e-4 : tol.step_logprob);
    }
  }
  EXPECT_TRUE(generator.kv_allocator().check_integrity().ok());
  EXPECT_TRUE(generator.req_to_token_pool().check_integrity().ok());
}

#ifdef SGL_TEST_ON_CUDA
// Decode through the CUDA graphs (batches padded to their bucket) gives the eager pass's logits.
TEST_P(GoldenParity, GraphReplayMatchesEagerDecode) {
  auto graphs = make_runner(GetParam());
  auto eager = make_runner(GetParam(), /*disable_cuda_graph=*/true);
  ASSERT_TRUE(graphs && eager);
  const nlohmann::json golden = golden_for(GetParam());
  for (size_t bs : {size_t{1}, size_t{3}, golden["cases"].size()}) {
    double worst = 0;
    std::vector<float> first;  // the graph runner's logits
    for (runner::ModelRunner* r : {graphs.get(), eager.get()}) {
      cache::ReqToTokenPool req_to_token(16, static_cast<int32_t>(r->context_length()));
      cache::TokenToKvPoolAllocator kv(static_cast<int32_t>(r->num_kv_slots()));
      runner::ForwardBatchBuilder builder(r->allocator(), 512, 16, req_to_token.table());
      std::vector<runner::BatchRequest> prefill, decode;
      std::vector<std::vector<int32_t>> ids, slots;
      for (size_t b = 0; b < bs; ++b) {
        // The prompt plus the first generated token: every request has >= 2 tokens.
        const nlohmann::json& c = golden["cases"][b % golden["cases"].size()];
        ids.push_back(c["prompt_ids"]);
        ids.back().push_back(c["greedy_ids"][0]);
        slots.push_back(*kv.alloc(static_cast<int32_t>(ids.back().size())));
      }
      for (size_t b = 0; b < bs; ++b) {
        const int32_t row = *req_to_token.alloc();
        req_to_token.write(row, 0, slots[b]);
        const auto n = ids[b].size();
        prefill.push_back(
            {row, 0, std::span(ids[b]).first(n - 1), std::span(slots[b]).first(n - 1)});
        decode.push_back({row, static_cast<int32_t>(n - 1), std::span(ids[b]).last(1),
                          std::span(slots[b]).last(1)});
      }
      r->forward_logits(
          builder.build(ForwardMode::kExtend, LogitsMode::kLastPerRequest, prefill, r->stream()));
      const Tensor logits = r->forward_logits(
          builder.build(ForwardMode::kDecode, LogitsMode::kLastPerRequest, decode, r->stream()));
      const float* p = logits.data<float>();
      if (r == graphs.get()) {
        first.assign(p, p + logits.numel());
      } else {
        ASSERT_EQ(first.size(), static_cast<size_t>(logits.numel()));
        for (size_t i = 0; i < first.size(); ++i) {
          worst = std::max(worst, std::abs(static_cast<double>(first[i]) - p[i]));
        }
      }
    }
    EXPECT_LT(worst, 2e-2) << "batch " << bs;  // bf16: other GEMM kernels for padded shapes
  }
}
#endif

// NOTE: the MoE models are not held to these bounds in bf16: a router flip at a near-tied expert
// moves a whole position, and which positions flip differs between implementations, so a bound
// derived from transformers' own bf16 error is meaningless where it tolerates every flip
// (tiny-mixtral: 3.0) and unmet where transformers happened not to flip. moe_routing_test holds
// their bf16 goldens to bounds at the positions routed as in f32; their bf16 math is also
// checked by the kernel sweeps (cuda_fused_moe_test) and the f32 CUDA goldens here.
INSTANTIATE_TEST_SUITE_P(Models, GoldenParity,
                         ::testing::Values("stories260K", "tiny-llama", "tiny-llama-tied",
                                           "tiny-qwen2", "tiny-qwen3"
#if !(defined(SGL_TEST_ON_CUDA) && !defined(SGL_TEST_DTYPE_F32))
                                           ,
                                           "tiny-mixtral", "tiny-qwen2-moe", "tiny-qwen3-moe"
#endif
                                           ),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::erase(name, '-');
                           return name;
                         });

}  // namespace
}  // namespace sgl
