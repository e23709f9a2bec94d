// NGRAM speculative decoding through the engine on the real stories260K model: every request's
// tokens (and logprobs) equal plain decoding's — greedy and seeded sampling alike, since each
// verified row draws with its own position's RNG step — while drafts are accepted (fewer
// steps), across stop tokens inside accepted drafts, max_new_tokens and context limits, the
// radix cache, chunked and mixed prefill, a KV cache tight enough to retract, and thinking
// budgets (drafts stop short of the forced close, whose tokens then come as plainly).
// Built with SGL_TEST_ON_CUDA: the same on the GPU in float32 (plain decoding then runs CUDA
// graphs and the device sampler, verify passes sample on the host: the two samplers' identity).
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "engine/model_engine.h"
#include "scheduler/greedy_ids_request.h"
#include "stream_outcome.h"
#include "test_data.h"

namespace sgl::engine {
namespace {

struct Config {
  const char* name;
  int64_t num_kv_slots;
  int64_t chunk;
  bool mixed;
  int32_t draft_tokens;
  double conservativeness = 1.0;  // low: admit optimistically, so decoding must retract
  // The overlap loop: the engine drains it before each step that drafts and after each verify.
  bool overlap = false;
};

// 32 requests from the golden prompts and their greedy continuations (stories repeat
// themselves, so n-gram drafts hit), mixed sampling settings and limits.
std::vector<GenerateRequest> workload() {
  const auto golden = test::golden("stories260K");
  std::vector<GenerateRequest> out;
  for (int i = 0; i < 32; ++i) {
    const auto& c = golden["cases"][i % golden["cases"].size()];
    std::vector<int32_t> p = c["prompt_ids"].get<std::vector<int32_t>>();
    const auto cont = c["greedy_ids"].get<std::vector<int32_t>>();
    // A prompt that quotes itself: the drafts' best case.
    if (i % 3 == 0) p.insert(p.end(), cont.begin(), cont.begin() + 20);
    GenerateRequest r = test::greedy_ids_request(p, 40 + i % 7 * 9);
    if (i % 4 == 1) {
      r.sampling.temperature = 0.8f;
      r.sampling.top_p = 0.9f;
      r.sampling.seed = 100 + i;
    }
    if (i % 5 == 2) {
      r.return_logprob = true;
      r.top_logprobs_num = 3;
      // token_ids_logprob: one list per accepted token of a verify pass (its own row).
      r.token_ids_logprob = {cont[0], cont[1], 2};
    }
    if (i % 6 == 3) {  // stop on a token the continuation holds: ends inside a verify
      r.ignore_eos = false;
      r.stop_token_ids = {cont[10]};
    }
    if (i % 7 == 4) {  // the output "reasons" until a budget forces a close it never writes
      r.reasoning_gate = {.end_ids = {1, 1},
                          .start_id = -1,
                          .max_tokens = 12 + i % 5,
                          .budget_end_ids = {cont[0], 1, 1}};
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<test::Outcome> run(const Config& c, bool speculative, EngineStats* stats) {
  runner::ModelRunnerOptions ro;
#ifdef SGL_TEST_ON_CUDA
  ro.device = Device::cuda(0);
  ro.dtype = "float32";
#endif
  ro.num_kv_slots = c.num_kv_slots;
  EngineOptions eo;
  eo.scheduler.chunked_prefill_size = c.chunk;
  eo.scheduler.enable_mixed_chunk = c.mixed;
  eo.scheduler.max_running_requests = 24;
  eo.scheduler.schedule_conservativeness = c.conservativeness;
  eo.disable_overlap_schedule = !c.overlap;  // the same for both runs
  if (speculative) {
    eo.scheduler.speculative.algorithm = speculative::SpeculativeAlgorithm::kNgram;
    eo.scheduler.speculative.num_draft_tokens = c.draft_tokens;
  }
  auto me = launch_model_engine(test::model_dir("stories260K"), ro, eo);
  EXPECT_TRUE(me.ok()) << me.status().to_string();
  if (!me.ok()) return {};
  me->engine->set_check_integrity(true);
  std::vector<test::Outcome> out = test::submit_and_collect(*me->engine, workload());
  EXPECT_TRUE(me->engine->last_integrity().ok()) << me->engine->last_integrity().to_string();
  *stats = me->engine->get_stats();
  return out;
}

class Speculative : public ::testing::TestWithParam<Config> {};

TEST_P(Speculative, NgramGivesPlainDecodingsTokensInFewerSteps) {
  const Config c = GetParam();
  EngineStats plain_stats, spec_stats;
  const std::vector<test::Outcome> plain = run(c, false, &plain_stats);
  const std::vector<test::Outcome> spec = run(c, true, &spec_stats);
  test::expect_same_outcomes(spec, plain, 1e-4, c.name);
  for (size_t i = 2; i < plain.size(); i += 5) {  // the requests that asked token_ids_logprob
    EXPECT_EQ(plain[i].token_ids.size(), plain[i].ids.size()) << i;
  }
  // The budgeted requests were forced where their budgets ran out, and were not left out of
  // speculation for it.
  const std::vector<GenerateRequest> asked = workload();
  for (size_t i = 0; i < asked.size(); ++i) {
    const grammar::ReasoningGate& gate = asked[i].reasoning_gate;
    if (!gate.has_budget()) continue;
    const auto at = static_cast<size_t>(gate.max_tokens);
    ASSERT_GE(spec[i].ids.size(), at + gate.budget_end_ids.size()) << i;
    EXPECT_EQ(std::vector<int32_t>(spec[i].ids.begin() + at,
                                   spec[i].ids.begin() + at + gate.budget_end_ids.size()),
              gate.budget_end_ids)
        << i;
  }
  const scheduler::SchedulerStats& s = spec_stats.scheduler;
  EXPECT_EQ(s.spec_plain_requests, 0) << c.name;
  EXPECT_EQ(s.generated_tokens_total, plain_stats.scheduler.generated_tokens_total);
  EXPECT_GT(s.spec_verify_steps, 0) << c.name;
  EXPECT_GT(s.spec_accepted_tokens, s.spec_verify_steps / 4) << c.name << ": drafts rarely hit";
  std::cout << c.name << ": " << s.spec_verify_steps << " verify steps, " << s.spec_accepted_tokens
            << " of " << s.spec_draft_tokens << " drafts accepted, retracted "
            << s.num_retracted_total << "\n";
}

INSTANTIATE_TEST_SUITE_P(Configs, Speculative,
                         ::testing::Values(Config{"default", 8000, 8192, true, 8},
                                           Config{"chunk16", 8000, 16, true, 4},
                                           Config{"no_mixed_draft2", 8000, 8192, false, 2},
                                           Config{"tight_kv", 640, 64, true, 8, 0.05},
                                           Config{"overlap", 8000, 8192, true, 8, 1.0, true}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace sgl::engine
