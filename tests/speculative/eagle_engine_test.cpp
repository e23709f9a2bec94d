// EAGLE speculative decoding through the engine, on tiny golden targets with the random test
// heads of scripts/make_eagle_heads.py: every request's tokens and logprobs equal plain
// decoding's (greedy and seeded sampling: each verified row draws with its own position's RNG
// step), whatever the drafts are; across stop tokens, max_new_tokens, the radix cache, chunked
// and mixed prefill and a KV cache tight enough to retract. The repeat head drafts the target's
// own greedy choice, so where greedy output repeats a token whole chains are accepted. At tp 2
// and 4 every rank drafts alike and the tokens are still plain decoding's at tp 1.
// Built with SGL_TEST_ON_CUDA: the same on the GPU in float32 (tp > 1 where there are the GPUs:
// each rank's draft graphs, captured on all ranks at once, hold the target's collectives).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>

#include "backend/devices.h"
#include "eagle_heads.h"
#include "engine/model_engine.h"
#include "scheduler/greedy_ids_request.h"
#include "stream_outcome.h"
#include "test_data.h"

namespace sgl::engine {
namespace {

const std::filesystem::path kHeads = test::eagle_heads_dir();

struct Config {
  const char* name;
  const char* target;
  const char* head;  // under kHeads
  int32_t num_steps;
  int64_t num_kv_slots = 8000;
  int64_t chunk = 8192;
  bool mixed = true;
  double conservativeness = 1.0;  // low: admit optimistically, so decoding must retract
  // The repeat head: its drafts stand where greedy output repeats a token.
  bool drafts_hit = false;
  // Tree drafts (--speculative-eagle-topk > 1): branches per step and the tokens verified.
  int32_t topk = 1;
  int32_t num_draft_tokens = 0;
  int32_t bench_accept_length = 0;  // sgl-bench's forced acceptance
  // --speculative-draft-policy adaptive: the counts follow the measured step times (a random
  // head's drafts rarely stand, so plain batches that skip the draft soon follow).
  bool adaptive = false;
  // The overlap loop (the command line's default): verify steps drain it, plain steps overlap.
  bool overlap = false;
  // Tensor parallelism of the speculative run (the plain one runs at tp 1): every rank holds the
  // whole head and drafts alike; the target's embedding and head are vocab-parallel (CPU only).
  int tp = 1;
};

// 16 requests over the target's golden prompts, mixed sampling settings and limits.
std::vector<GenerateRequest> workload(const std::string& target) {
  const auto golden = test::golden(target);
  std::vector<GenerateRequest> out;
  for (int i = 0; i < 16; ++i) {
    const auto& c = golden["cases"][i % golden["cases"].size()];
    const auto cont = c["greedy_ids"].get<std::vector<int32_t>>();
    GenerateRequest r =
        test::greedy_ids_request(c["prompt_ids"].get<std::vector<int32_t>>(), 24 + i % 5 * 9);
    if (i % 4 == 1) {
      r.sampling.temperature = 0.8f;
      r.sampling.top_p = 0.9f;
      r.sampling.seed = 100 + i;
    }
    if (i % 5 == 2) {
      r.return_logprob = true;
      r.top_logprobs_num = 3;
    }
    if (i % 6 == 3) {  // stop on a token greedy output holds: may end inside a verify
      r.ignore_eos = false;
      r.stop_token_ids = {cont[cont.size() / 2]};
    }
    out.push_back(std::move(r));
  }
  return out;
}

Result<ModelEngine> launch(const Config& c, bool speculative) {
  runner::ModelRunnerOptions ro;
#ifdef SGL_TEST_ON_CUDA
  ro.device = Device::cuda(0);
  ro.dtype = "float32";
#endif
  ro.num_kv_slots = c.num_kv_slots;
  if (speculative) ro.tp_size = c.tp;
  EngineOptions eo;
  eo.scheduler.chunked_prefill_size = c.chunk;
  eo.scheduler.enable_mixed_chunk = c.mixed;
  eo.scheduler.max_running_requests = 12;
  eo.scheduler.schedule_conservativeness = c.conservativeness;
  eo.disable_overlap_schedule = !c.overlap;  // the same for both runs
  if (speculative) {
    speculative::SpeculativeOptions& spec = eo.scheduler.speculative;
    spec.algorithm = std::string(c.head).ends_with("eagle3")
                         ? speculative::SpeculativeAlgorithm::kEagle3
                         : speculative::SpeculativeAlgorithm::kEagle;
    spec.draft_model_path = (kHeads / c.head).string();
    spec.num_steps = c.num_steps;
    spec.eagle_topk = c.topk;
    if (c.num_draft_tokens > 0) spec.num_draft_tokens = c.num_draft_tokens;
    spec.bench_accept_length = c.bench_accept_length;
    spec.adaptive_drafts = c.adaptive;
    EXPECT_TRUE(spec.validate(c.num_draft_tokens > 0).ok());
  }
  return launch_model_engine(test::model_dir(c.target), ro, eo);
}

std::vector<test::Outcome> run(const Config& c, bool speculative, EngineStats* stats) {
  auto me = launch(c, speculative);
  EXPECT_TRUE(me.ok()) << me.status().to_string();
  if (!me.ok()) return {};
  me->engine->set_check_integrity(true);
  std::vector<test::Outcome> out = test::submit_and_collect(*me->engine, workload(c.target));
  EXPECT_TRUE(me->engine->last_integrity().ok()) << me->engine->last_integrity().to_string();
  *stats = me->engine->get_stats();
  return out;
}

class EagleEngine : public ::testing::TestWithParam<Config> {};

TEST_P(EagleEngine, GivesPlainDecodingsTokens) {
  const Config c = GetParam();
#ifdef SGL_TEST_ON_CUDA
  if (c.tp > backend::cuda_device_count()) {
    GTEST_SKIP() << "--tp-size " << c.tp << " needs " << c.tp << " GPUs, found "
                 << backend::cuda_device_count();
  }
#endif
  EngineStats plain_stats, spec_stats;
  const std::vector<test::Outcome> plain = run(c, false, &plain_stats);
  const std::vector<test::Outcome> spec = run(c, true, &spec_stats);
  test::expect_same_outcomes(spec, plain, 1e-4, c.name);
  const scheduler::SchedulerStats& s = spec_stats.scheduler;
  EXPECT_EQ(s.generated_tokens_total, plain_stats.scheduler.generated_tokens_total);
  EXPECT_GT(s.spec_verify_steps, 0) << c.name;
  // The random heads' drafts almost never stand; the repeat head's do wherever greedy output
  // repeats a token (a few percent of this workload's steps).
  if (c.drafts_hit) {
    EXPECT_GT(s.spec_accepted_tokens, s.spec_verify_steps / 20) << c.name << ": drafts rarely hit";
  }
  std::cout << c.name << ": " << s.spec_verify_steps << " verify steps, " << s.spec_accepted_tokens
            << " of " << s.spec_draft_tokens << " drafts accepted, retracted "
            << s.num_retracted_total << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Configs, EagleEngine,
    ::testing::Values(Config{"llama_eagle", "tiny-llama", "tiny-llama-eagle", 3},
                      Config{"llama_eagle3", "tiny-llama", "tiny-llama-eagle3", 4},
                      Config{"qwen3_eagle3_chunk16", "tiny-qwen3", "tiny-qwen3-eagle3", 2, 8000,
                             16},
                      Config{.name = "llama_repeat",
                             .target = "tiny-llama",
                             .head = "tiny-llama-eagle-repeat",
                             .num_steps = 4,
                             .drafts_hit = true},
                      Config{"llama_repeat_chunk16_no_mixed", "tiny-llama",
                             "tiny-llama-eagle-repeat", 3, 8000, 16, false, 1.0, true},
                      Config{"llama_repeat_tight_kv", "tiny-llama", "tiny-llama-eagle-repeat", 5,
                             400, 32, true, 0.05, true},
                      Config{.name = "llama_eagle_adaptive",
                             .target = "tiny-llama",
                             .head = "tiny-llama-eagle",
                             .num_steps = 3,
                             .adaptive = true},
                      Config{.name = "llama_repeat_overlap",
                             .target = "tiny-llama",
                             .head = "tiny-llama-eagle-repeat",
                             .num_steps = 4,
                             .drafts_hit = true,
                             .overlap = true},
                      Config{.name = "llama_eagle_adaptive_overlap",
                             .target = "tiny-llama",
                             .head = "tiny-llama-eagle",
                             .num_steps = 3,
                             .adaptive = true,
                             .overlap = true},
                      Config{.name = "qwen3_eagle3_adaptive_tight_kv",
                             .target = "tiny-qwen3",
                             .head = "tiny-qwen3-eagle3",
                             .num_steps = 4,
                             .num_kv_slots = 400,
                             .chunk = 32,
                             .conservativeness = 0.05,
                             .adaptive = true},
                      // Trees: (steps, topk, num_draft_tokens) from a star to deep trees.
                      Config{.name = "llama_eagle_tree_3_2_6",
                             .target = "tiny-llama",
                             .head = "tiny-llama-eagle",
                             .num_steps = 3,
                             .topk = 2,
                             .num_draft_tokens = 6},
                      Config{.name = "llama_eagle3_tree_4_4_12",
                             .target = "tiny-llama",
                             .head = "tiny-llama-eagle3",
                             .num_steps = 4,
                             .topk = 4,
                             .num_draft_tokens = 12},
                      Config{.name = "llama_eagle_star_1_5_6",
                             .target = "tiny-llama",
                             .head = "tiny-llama-eagle",
                             .num_steps = 1,
                             .topk = 5,
                             .num_draft_tokens = 6},
                      Config{.name = "qwen3_eagle3_tree_chunk16_2_3_5",
                             .target = "tiny-qwen3",
                             .head = "tiny-qwen3-eagle3",
                             .num_steps = 2,
                             .chunk = 16,
                             .topk = 3,
                             .num_draft_tokens = 5},
                      Config{.name = "qwen3_eagle_tree_3_2_7",
                             .target = "tiny-qwen3",
                             .head = "tiny-qwen3-eagle",
                             .num_steps = 3,
                             .topk = 2,
                             .num_draft_tokens = 7},
                      Config{.name = "llama_repeat_tree_4_2_8",
                             .target = "tiny-llama",
                             .head = "tiny-llama-eagle-repeat",
                             .num_steps = 4,
                             .drafts_hit = true,
                             .topk = 2,
                             .num_draft_tokens = 8},
                      Config{.name = "llama_repeat_tree_chunk16_no_mixed_3_3_9",
                             .target = "tiny-llama",
                             .head = "tiny-llama-eagle-repeat",
                             .num_steps = 3,
                             .chunk = 16,
                             .mixed = false,
                             .drafts_hit = true,
                             .topk = 3,
                             .num_draft_tokens = 9},
                      Config{.name = "llama_repeat_tree_tight_kv_5_3_10",
                             .target = "tiny-llama",
                             .head = "tiny-llama-eagle-repeat",
                             .num_steps = 5,
                             .num_kv_slots = 400,
                             .chunk = 32,
                             .conservativeness = 0.05,
                             .drafts_hit = true,
                             .topk = 3,
                             .num_draft_tokens = 10},
                      // Tensor parallelism: chains, EAGLE-3, a tree, the adaptive policy and
                      // the overlap loop, against plain decoding at tp 1.
                      Config{.name = "llama_eagle_tp2",
                             .target = "tiny-llama",
                             .head = "tiny-llama-eagle",
                             .num_steps = 3,
                             .tp = 2},
                      Config{.name = "qwen3_eagle3_chunk16_tp2",
                             .target = "tiny-qwen3",
                             .head = "tiny-qwen3-eagle3",
                             .num_steps = 2,
                             .chunk = 16,
                             .tp = 2},
                      Config{.name = "llama_repeat_tree_tp2_3_2_7",
                             .target = "tiny-llama",
                             .head = "tiny-llama-eagle-repeat",
                             .num_steps = 3,
                             .drafts_hit = true,
                             .topk = 2,
                             .num_draft_tokens = 7,
                             .tp = 2},
                      Config{.name = "llama_repeat_overlap_tp4",
                             .target = "tiny-llama",
                             .head = "tiny-llama-eagle-repeat",
                             .num_steps = 4,
                             .drafts_hit = true,
                             .overlap = true,
                             .tp = 4},
                      Config{.name = "llama_eagle_adaptive_overlap_tp2",
                             .target = "tiny-llama",
                             .head = "tiny-llama-eagle",
                             .num_steps = 3,
                             .adaptive = true,
                             .overlap = true,
                             .tp = 2}),
    [](const auto& info) { return std::string(info.param.name); });

// What EAGLE does not run yet is refused at start, saying what: across nodes, before anything
// loads.
TEST(EagleEngineRefusals, SeveralNodes) {
  EngineOptions eo;
  speculative::SpeculativeOptions& spec = eo.scheduler.speculative;
  spec.algorithm = speculative::SpeculativeAlgorithm::kEagle;
  spec.draft_model_path = (kHeads / "tiny-llama-eagle").string();
  runner::ModelRunnerOptions ro;
  ro.tp_size = 2;
  const distributed::MultiNode nodes{2, 0, distributed::DistInitAddr{"127.0.0.1", 29999}};
  auto across = launch_model_engine(test::model_dir("tiny-llama"), ro, eo, {}, nodes);
  ASSERT_FALSE(across.ok());
  EXPECT_NE(across.status().message().find(
                "--nnodes 2 with EAGLE speculative decoding is not implemented"),
            std::string::npos)
      << across.status().to_string();
}

// sgl-bench's --speculative-bench-accept-length: whatever the random head drafts, each verify
// yields L tokens (fewer only where max_new_tokens or a stop cuts the chain), and
// the slots of the forced tokens are kept like accepted ones: integrity holds after each step.
TEST(EagleEngineBench, ForcedAcceptLengthIsTheAcceptLength) {
  for (const int32_t length : {1, 3, 5}) {
    const Config c{.name = "forced",
                   .target = "tiny-llama",
                   .head = "tiny-llama-eagle",
                   .num_steps = 4,
                   .bench_accept_length = length};
    EngineStats stats;
    const std::vector<test::Outcome> out = run(c, true, &stats);
    ASSERT_FALSE(out.empty());
    const scheduler::SchedulerStats& s = stats.scheduler;
    ASSERT_GT(s.spec_verify_steps, 0);
    EXPECT_LE(s.spec_accepted_tokens, (length - 1) * s.spec_verify_steps);
    EXPECT_GE(s.spec_accepted_tokens, (length - 1) * s.spec_verify_steps * 8 / 10)
        << "accept length " << s.spec_accept_length() << ", forced " << length;
    std::cout << "forced " << length << ": accept length " << s.spec_accept_length() << "\n";
  }
}

// A soak: tree drafts over a KV cache tight enough to retract, every third request aborted once
// its first tokens arrive. The scheduler's integrity holds after every step, and once every
// request has ended each KV slot in use is one the radix cache holds: none leaked.
TEST(EagleEngineSoak, TreesLeakNoSlotUnderAbortsAndRetraction) {
  const Config c{.name = "soak",
                 .target = "tiny-llama",
                 .head = "tiny-llama-eagle-repeat",
                 .num_steps = 4,
                 .num_kv_slots = 400,
                 .chunk = 32,
                 .conservativeness = 0.05,
                 .topk = 3,
                 .num_draft_tokens = 10};
  auto me = launch(c, true);
  ASSERT_TRUE(me.ok()) << me.status().to_string();
  me->engine->set_check_integrity(true);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int round = 0; round < 3; ++round) {
    for (GenerateRequest& r : workload(c.target)) {
      auto s = me->engine->submit(std::move(r));
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      streams.push_back(*s);
    }
  }
  for (size_t i = 0; i < streams.size(); i += 3) {
    ASSERT_TRUE(streams[i]->next(std::chrono::seconds(60)).has_value());
    me->engine->abort(streams[i]->rid());
  }
  for (auto& s : streams) test::collect(*s);
  EngineStats stats = me->engine->get_stats();
  for (int wait = 0; wait < 100 && stats.scheduler.kv_used != stats.scheduler.kv_cached; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stats = me->engine->get_stats();
  }
  EXPECT_TRUE(me->engine->last_integrity().ok()) << me->engine->last_integrity().to_string();
  EXPECT_EQ(stats.scheduler.kv_used, stats.scheduler.kv_cached) << "KV slots leaked";
  EXPECT_GT(stats.scheduler.spec_accepted_tokens, 0);
  EXPECT_GT(stats.scheduler.num_retracted_total, 0) << "the soak never retracted";
}

}  // namespace
}  // namespace sgl::engine
