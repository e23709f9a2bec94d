// Scheduler unit tests against the fake runner: chunking, prefix reuse, eviction, retraction,
// aborts, policies, and a long randomized run with integrity checked after every step — each
// in the normal loop and in the overlap loop (batch N+1 scheduled before N is processed).
#include "scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "scheduler/scheduler_driver.h"

namespace sgl::scheduler {
namespace {

using namespace test_driver;

class SchedulerLoops : public ::testing::TestWithParam<bool> {
 protected:
  bool overlap() const { return GetParam(); }
};

TEST_P(SchedulerLoops, ChunkedPrefillSplitsAtBudgetAndResumesFirst) {
  SchedulerOptions options;
  options.chunked_prefill_size = 16;
  Driver d(options, 1024, 256, overlap());
  const uint64_t big = d.submit(test::greedy_ids_request(tokens(40, 1), 4));
  d.step();  // first chunk
  const uint64_t small = d.submit(test::greedy_ids_request(tokens(5, 2), 4));
  d.run_until_idle();
  // Prefill batches: [16 of big], [16 of big, ...], [8 of big + small...].
  std::vector<std::pair<uint64_t, int32_t>> extends;
  for (const BatchRecord& b : d.batches()) {
    if (b.mode == ForwardMode::kDecode) continue;
    extends.insert(extends.end(), b.extends.begin(), b.extends.end());
  }
  ASSERT_GE(extends.size(), 4u);
  EXPECT_EQ(extends[0], std::make_pair(big, 16));
  EXPECT_EQ(extends[1], std::make_pair(big, 16));  // the chunk resumes before `small`
  EXPECT_EQ(extends[2], std::make_pair(big, 8));
  EXPECT_EQ(extends[3], std::make_pair(small, 5));
  for (const BatchRecord& b : d.batches()) EXPECT_LE(b.num_tokens, 16);
  d.expect_reference_outputs();
}

// A thinking budget the output does not reach gets no mask rows: its batches carry no mask (the
// runner would wait for the host's step before to sample), its tokens are the model's own.
// (That the rows come back in time for a forced close: StructuredOutputReasoning's engine test,
// whose forced tokens a missing row would abort.)
TEST_P(SchedulerLoops, AThinkingBudgetFarFromItsEndPlansNoMask) {
  Driver d(SchedulerOptions{}, 1024, 256, overlap());
  GenerateRequest far = test::greedy_ids_request(tokens(8, 3), 12);
  // Closing ids the fake model never writes (two EOS in a row; EOS is ignored here).
  far.reasoning_gate = {
      .end_ids = {kEos, kEos}, .start_id = -1, .max_tokens = 100, .budget_end_ids = {kEos, kEos}};
  d.submit(far);
  d.run_until_idle();
  for (const BatchRecord& b : d.batches()) EXPECT_FALSE(b.masked) << b.id;
  d.expect_reference_outputs();
}

// A batch that scores a prompt (returns logits for every token) stays within
// max_scoring_tokens: the scoring request is chunked to it and others wait or share what is
// left, while batches without a scorer still take the full chunk; every prompt position is
// scored exactly once.
TEST_P(SchedulerLoops, ScoringBatchesStayWithinTheLogitsBudget) {
  SchedulerOptions options;
  options.chunked_prefill_size = 64;
  options.max_scoring_tokens = 16;
  // Counts whole batches: no decodes riding along (they add one logits row each, which the
  // buffer holds beside the scoring budget).
  options.enable_mixed_chunk = false;
  Driver d(options, 1024, 256, overlap());
  d.submit(test::greedy_ids_request(tokens(10, 4), 3));
  GenerateRequest scoring = test::greedy_ids_request(tokens(40, 5), 3);
  scoring.return_logprob = true;
  scoring.logprob_start_len = 0;
  const uint64_t scorer = d.submit(scoring);
  d.submit(test::greedy_ids_request(tokens(50, 6), 3));
  d.run_until_idle();
  int64_t scored = 0, scorer_tokens = 0, widest_plain_batch = 0;
  for (const BatchRecord& b : d.batches()) {
    if (b.mode == ForwardMode::kDecode) continue;
    bool has_scorer = false;
    for (const auto& [rid, len] : b.extends) {
      if (rid == scorer) {
        has_scorer = true;
        scorer_tokens += len;
      }
    }
    if (has_scorer) {
      EXPECT_LE(b.num_tokens, 16);
    } else {
      widest_plain_batch = std::max(widest_plain_batch, b.num_tokens);
    }
    scored += b.scored;
  }
  EXPECT_EQ(scorer_tokens, 40);
  EXPECT_EQ(scored, 39);              // positions 0 .. 38 score tokens 1 .. 39
  EXPECT_GT(widest_plain_batch, 16);  // the budget binds only scoring batches
  d.expect_reference_outputs();
}

// Every token of a speculative verify batch is a logits row: its tokens stay within
// max_verify_tokens (drafts are cut to fit), and the outputs are the reference's. In the overlap
// loop the scheduler asks for a drain before a step that drafts (a draft needs its request's
// last token on the host), so drafts are verified there too.
TEST_P(SchedulerLoops, VerifyBatchesStayWithinTheirTokenBound) {
  SchedulerOptions options;
  options.speculative.algorithm = speculative::SpeculativeAlgorithm::kNgram;
  options.speculative.num_draft_tokens = 8;
  options.max_verify_tokens = 10;
  Driver d(options, 1024, 256, overlap());
  // Prompts that repeat themselves: the n-gram lookup finds drafts in them.
  for (int32_t i = 0; i < 4; ++i) {
    std::vector<int32_t> p;
    for (int32_t r = 0; r < 4; ++r) p.insert(p.end(), {1 + i, 2 + i, 3 + i});
    d.submit(test::greedy_ids_request(p, 24));
  }
  d.run_until_idle();
  int64_t drafts = 0;
  for (const BatchRecord& b : d.batches()) {
    if (b.drafts == 0) continue;
    drafts += b.drafts;
    EXPECT_LE(b.num_tokens, 10);
  }
  EXPECT_GT(drafts, 0) << "no batch verified drafts";
  d.expect_reference_outputs();
}

// min_new_tokens masks the stop tokens at its first steps only: the request drafts once it
// has that many tokens, not never (its mask reads one row a step).
TEST(SchedulerSpeculative, MinNewTokensHoldsDraftsOnlyWhileItsMaskDoes) {
  SchedulerOptions options;
  options.speculative.algorithm = speculative::SpeculativeAlgorithm::kNgram;
  options.speculative.num_draft_tokens = 4;
  Driver d(options, 1024, 256, /*overlap=*/false);
  std::vector<int32_t> p;
  for (int32_t r = 0; r < 4; ++r) p.insert(p.end(), {1, 2, 3});
  GenerateRequest r = test::greedy_ids_request(p, 24);
  r.sampling.min_new_tokens = 4;
  d.submit(r);
  d.run_until_idle();
  // The prefill's token, then plain decodes up to 4 tokens; drafts only after them.
  int64_t plain_before = 0, drafts = 0;
  for (const BatchRecord& b : d.batches()) {
    if (b.prefill_tokens > 0) continue;
    if (b.drafts > 0 && drafts == 0) EXPECT_GE(plain_before, 3);
    drafts += b.drafts;
    plain_before += drafts == 0;
  }
  EXPECT_GT(drafts, 0) << "min_new_tokens kept the request from drafting for good";
  d.expect_reference_outputs();
  // A penalty reads one row a step for good: that request is counted as left out.
  EXPECT_EQ(d.scheduler().stats().spec_plain_requests, 0);
  r.sampling.repetition_penalty = 1.2f;
  d.submit(r);
  d.run_until_idle();
  EXPECT_EQ(d.scheduler().stats().spec_plain_requests, 1);
}

// The accept length counts the drafts a request kept: where a verify's accepted drafts run past
// a stop token, only those before it. The fake model here remembers one token, so its output
// cycles and the prompt (the same cycle) gives the n-gram lookup drafts that stand; the stop
// token lies inside the cycle. Every output token is a prefill's, a decode step's, or an accepted
// draft's.
TEST(SchedulerSpeculative, AcceptedDraftsPastAStopAreNotCounted) {
  SchedulerOptions options;
  options.speculative.algorithm = speculative::SpeculativeAlgorithm::kNgram;
  options.speculative.num_draft_tokens = 8;
  Driver d(options, 4096, 512, /*overlap=*/false);
  d.runner().set_memory(1);
  std::map<uint64_t, std::vector<int32_t>> expected;
  for (int32_t start = 1; start <= 6; ++start) {
    const std::vector<int32_t> walk = test::fake_reference({start}, 240, kVocab, {}, 1);
    std::vector<int32_t> prompt = {start};
    prompt.insert(prompt.end(), walk.begin(), walk.begin() + 200);
    GenerateRequest r = test::greedy_ids_request(prompt, 30);
    r.stop_token_ids = {walk[204]};
    expected[d.submit(r)] = test::fake_reference(prompt, 30, kVocab, r.stop_token_ids, 1);
  }
  d.run_until_idle();
  int64_t output_tokens = 0;
  for (const auto& [rid, want] : expected) {
    EXPECT_EQ(d.outputs()[rid], want) << "request " << rid;
    EXPECT_EQ(d.finished()[rid].reason, FinishReason::kStop);
    output_tokens += static_cast<int64_t>(d.outputs()[rid].size());
  }
  int64_t decode_entries = 0;
  for (const BatchRecord& b : d.batches()) decode_entries += b.decode_entries;
  const SchedulerStats s = d.scheduler().stats();
  EXPECT_GT(s.spec_accepted_tokens, 0) << "no draft stood";
  EXPECT_GT(s.spec_draft_tokens, s.spec_accepted_tokens) << "no draft past a stop";
  EXPECT_EQ(output_tokens,
            static_cast<int64_t>(expected.size()) + decode_entries + s.spec_accepted_tokens);
}

// --speculative-draft-policy adaptive: the draft count follows the measured step times. Here
// the engine's clock is simulated: the outputs stay the reference's whatever the counts are.
std::vector<BatchRecord> run_adaptive(const std::function<double(const BatchRecord&)>& time,
                                      speculative::SpeculativeAlgorithm algorithm, bool overlap) {
  SchedulerOptions options;
  options.speculative.algorithm = algorithm;
  options.speculative.draft_model_path = "/heads/eagle";  // the fake runner drafts nothing
  if (algorithm == speculative::SpeculativeAlgorithm::kNgram) {
    options.speculative.draft_model_path.clear();
  }
  options.speculative.num_draft_tokens = 4;
  options.speculative.num_steps = 3;
  options.speculative.adaptive_drafts = true;
  EXPECT_TRUE(options.speculative.validate().ok());
  Driver d(options, 4096, 512, overlap);
  d.step_time = time;
  for (int32_t i = 0; i < 6; ++i) {
    std::vector<int32_t> p;
    for (int32_t r = 0; r < 4; ++r) p.insert(p.end(), {1 + i, 2 + i, 3 + i});
    d.submit(test::greedy_ids_request(p, 200));
  }
  d.run_until_idle();
  d.expect_reference_outputs();
  return d.batches();
}

// Decode batches of `batches` after the first `warm` that verified drafts, as a fraction.
double drafting_share(const std::vector<BatchRecord>& batches, size_t warm) {
  int64_t decodes = 0, drafting = 0;
  for (size_t i = warm; i < batches.size(); ++i) {
    if (batches[i].prefill_tokens > 0) continue;
    ++decodes;
    drafting += batches[i].drafts > 0;
  }
  return decodes ? static_cast<double>(drafting) / static_cast<double>(decodes) : 0;
}

TEST_P(SchedulerLoops, AdaptiveDraftsStopWhenVerifyingCostsMore) {
  // A verify step costs 10x a plain one: after trying each count, plain decoding wins; the
  // policy still tries the others now and then (every 64 steps).
  const auto batches = run_adaptive([](const BatchRecord& b) { return b.drafts > 0 ? 10.0 : 1.0; },
                                    speculative::SpeculativeAlgorithm::kNgram, overlap());
  EXPECT_LT(drafting_share(batches, 10), 0.1);
  EXPECT_GT(drafting_share(batches, 0), 0.0) << "never tried to draft";
  // The 64th choice explores too, also in the overlap loop, where a choice with drafts waits for
  // the plain batch in flight (a drain) and must not be lost to it.
  ASSERT_GT(batches.size(), 100u);
  EXPECT_GT(drafting_share(batches, 40), 0.0) << "stopped trying to draft";
}

TEST_P(SchedulerLoops, AdaptiveDraftsKeepDraftingWhenItPays) {
  // Verifying is free and each draft makes the step faster still: the most drafts win.
  const auto batches =
      run_adaptive([](const BatchRecord& b) { return 1.0 / (1.0 + static_cast<double>(b.drafts)); },
                   speculative::SpeculativeAlgorithm::kNgram, overlap());
  EXPECT_GT(drafting_share(batches, 10), 0.5);
}

TEST_P(SchedulerLoops, AdaptivePlainDecodingSkipsTheEagleDraftForGood) {
  // EAGLE (the fake runner fills no drafts: placeholders verify as rejected): once plain
  // decoding is measured best, its batches skip the draft, and their requests draft no more;
  // in the overlap loop those plain steps overlap (no drain is asked for).
  const auto batches = run_adaptive([](const BatchRecord& b) { return b.drafts > 0 ? 10.0 : 1.0; },
                                    speculative::SpeculativeAlgorithm::kEagle, overlap());
  size_t first_skip = batches.size();
  for (size_t i = 0; i < batches.size(); ++i) {
    if (batches[i].skip_draft && first_skip == batches.size()) first_skip = i;
    if (batches[i].skip_draft) {
      EXPECT_EQ(batches[i].drafts, 0);
    }
  }
  ASSERT_LT(first_skip, batches.size()) << "no batch skipped the draft";
  size_t overlapped = 0;
  for (size_t i = first_skip; i < batches.size(); ++i) {
    EXPECT_EQ(batches[i].drafts, 0) << "batch " << i << " drafted for stale requests";
    overlapped += batches[i].overlapped;
  }
  if (overlap()) {
    EXPECT_GT(overlapped, (batches.size() - first_skip) * 9 / 10);
  } else {
    EXPECT_EQ(overlapped, 0u);
  }
}

// EAGLE's draft shares the KV slots: a stale request's positions past where its draft stopped
// (a skip_draft step) hold no draft KV, so they are not cached for a later request to hit;
// what came before them is. (In the overlap loop the request's first caching comes after a
// drain, when it may already be stale.)
TEST_P(SchedulerLoops, StaleEaglePositionsAreNotCached) {
  SchedulerOptions options;
  options.speculative.algorithm = speculative::SpeculativeAlgorithm::kEagle;
  options.speculative.draft_model_path = "/heads/eagle";
  options.speculative.num_draft_tokens = 4;
  options.speculative.num_steps = 3;
  options.speculative.adaptive_drafts = true;
  ASSERT_TRUE(options.speculative.validate().ok());
  Driver d(options, 4096, 512, overlap());
  d.step_time = [](const BatchRecord& b) { return b.drafts > 0 ? 10.0 : 1.0; };
  // A first request makes plain decoding the best; a second arrives once it is, so it goes
  // stale at its first decode step (in the overlap loop while still in flight).
  std::vector<int32_t> prompt;
  for (int32_t r = 0; r < 4; ++r) prompt.insert(prompt.end(), {1, 2, 3});
  d.submit(test::greedy_ids_request(prompt, 300));
  for (int i = 0; i < 60; ++i) d.step();
  const std::vector<int32_t> second_prompt = tokens(12, 5);
  const uint64_t second = d.submit(test::greedy_ids_request(second_prompt, 200));
  d.run_until_idle();
  ASSERT_TRUE(std::any_of(d.batches().begin(), d.batches().end(), [](const BatchRecord& b) {
    return b.skip_draft;
  })) << "the draft was never skipped";
  std::vector<int32_t> again = second_prompt;
  again.insert(again.end(), d.outputs()[second].begin(), d.outputs()[second].end());
  const int64_t before = d.scheduler().stats().cached_prompt_tokens_total;
  d.submit(test::greedy_ids_request(again, 2));
  d.run_until_idle();
  const int64_t cached = d.scheduler().stats().cached_prompt_tokens_total - before;
  EXPECT_GE(cached, static_cast<int64_t>(second_prompt.size()));
  EXPECT_LT(cached, static_cast<int64_t>(again.size()) - 100) << "stale positions were cached";
  d.expect_reference_outputs();
}

TEST_P(SchedulerLoops, PrefixHitsSkipRecomputation) {
  Driver d({}, 1024, 256, overlap());
  std::vector<int32_t> shared = tokens(48, 3);
  d.submit(test::greedy_ids_request(shared, 3));
  d.run_until_idle();
  const int64_t before = d.runner().computed_tokens();
  std::vector<int32_t> second = shared;
  second.push_back(5);
  second.push_back(6);
  d.submit(test::greedy_ids_request(second, 3));
  d.run_until_idle();
  // 48 shared tokens come from the cache: 2 new prompt tokens + 2 decode steps.
  EXPECT_EQ(d.runner().computed_tokens() - before, 2 + 2);
  EXPECT_EQ(d.scheduler().stats().cached_prompt_tokens_total, 48);
  EXPECT_NEAR(d.scheduler().stats().cache_hit_rate(), 48.0 / 98.0, 1e-9);
  d.expect_reference_outputs();
}

// A request that arrives while another with the same prefix is still decoding takes that prefix
// from the cache (in the overlap loop the decoding request is always in flight: its prompt is
// published all the same).
TEST_P(SchedulerLoops, APrefixIsSharedWhileItsRequestDecodes) {
  Driver d({}, 1024, 256, overlap());
  const std::vector<int32_t> shared = tokens(48, 4);
  std::vector<int32_t> a = shared, b = shared;
  a.push_back(1);
  b.push_back(2);
  const uint64_t first = d.submit(test::greedy_ids_request(a, 20));
  for (int i = 0; i < 3; ++i) d.step();
  ASSERT_FALSE(d.finished().count(first));
  d.submit(test::greedy_ids_request(b, 3));
  d.run_until_idle();
  EXPECT_EQ(d.scheduler().stats().cached_prompt_tokens_total, 48);
  d.expect_reference_outputs();
}

// extra_key / cache_salt: a request takes cached KV only from requests of its own namespace.
TEST_P(SchedulerLoops, APrefixIsSharedOnlyWithinItsCacheNamespace) {
  Driver d({}, 1024, 256, overlap());
  const std::vector<int32_t> shared = tokens(48, 3);
  auto request = [&](int32_t last, const char* ns) {
    std::vector<int32_t> prompt = shared;
    prompt.push_back(last);
    GenerateRequest r = test::greedy_ids_request(prompt, 3);
    r.cache_namespace = ns;
    return r;
  };
  d.submit(request(1, "tenant-a"));
  d.run_until_idle();
  int64_t before = d.runner().computed_tokens();
  d.submit(request(2, "tenant-b"));  // another namespace: computes the whole prompt
  d.run_until_idle();
  EXPECT_EQ(d.runner().computed_tokens() - before, 49 + 2);
  before = d.runner().computed_tokens();
  d.submit(request(3, ""));  // the default namespace: the same
  d.run_until_idle();
  EXPECT_EQ(d.runner().computed_tokens() - before, 49 + 2);
  EXPECT_EQ(d.scheduler().stats().cached_prompt_tokens_total, 0);
  before = d.runner().computed_tokens();
  d.submit(request(4, "tenant-b"));  // its own namespace: the shared 48 come from the cache
  d.run_until_idle();
  EXPECT_EQ(d.runner().computed_tokens() - before, 1 + 2);
  EXPECT_EQ(d.scheduler().stats().cached_prompt_tokens_total, 48);
  d.expect_reference_outputs();
  EXPECT_TRUE(d.scheduler().flush_cache());
  EXPECT_EQ(d.scheduler().stats().kv_used, 0);
}

// SGLang's --max-loras-per-batch: a batch runs at most that many LoRA adapters (the base model
// counted as one); requests of another adapter wait, and every request completes.
TEST_P(SchedulerLoops, ABatchRunsAtMostMaxLorasPerBatchAdapters) {
  SchedulerOptions options;
  options.max_loras_per_batch = 2;
  Driver d(options, 2048, 256, overlap());
  std::map<uint64_t, int32_t> lora_of;
  for (int32_t i = 0; i < 12; ++i) {
    GenerateRequest r = test::greedy_ids_request(tokens(20 + i, i + 1), 4);
    r.lora_id = i % 4;
    lora_of[d.submit(std::move(r))] = i % 4;
  }
  d.run_until_idle();
  size_t most = 0;
  for (const BatchRecord& b : d.batches()) {
    std::set<int32_t> loras;
    for (const auto& [rid, len] : b.extends) loras.insert(lora_of.at(rid));
    EXPECT_LE(loras.size(), 2u);
    most = std::max(most, loras.size());
  }
  EXPECT_EQ(most, 2u);
  d.expect_reference_outputs();
}

TEST_P(SchedulerLoops, DisabledRadixCacheRecomputes) {
  SchedulerOptions options;
  options.disable_radix_cache = true;
  Driver d(options, 1024, 256, overlap());
  d.submit(test::greedy_ids_request(tokens(48, 3), 3));
  d.run_until_idle();
  const int64_t before = d.runner().computed_tokens();
  d.submit(test::greedy_ids_request(tokens(48, 3), 3));
  d.run_until_idle();
  EXPECT_EQ(d.runner().computed_tokens() - before, 48 + 2);
  EXPECT_EQ(d.scheduler().stats().kv_used, 0);
  d.expect_reference_outputs();
}

// Without a radix cache nothing one request computes can serve another, so identical prompts
// are admitted together, not one a round waiting for a cache that never serves them.
TEST_P(SchedulerLoops, DisabledRadixCacheAdmitsIdenticalPromptsTogether) {
  SchedulerOptions options;
  options.disable_radix_cache = true;
  Driver d(options, 1024, 256, overlap());
  for (int i = 0; i < 4; ++i) d.submit(test::greedy_ids_request(tokens(40, 5), 3));
  d.step();
  ASSERT_FALSE(d.batches().empty());
  EXPECT_EQ(d.batches().front().extends.size(), 4u);
  d.run_until_idle();
  d.expect_reference_outputs();
}

// new_token_ratio decays over decode steps; idle, it returns to its initial value, so the next
// burst is admitted as the first was (SGLang's reset when idle).
TEST_P(SchedulerLoops, NewTokenRatioResetsWhenIdle) {
  SchedulerOptions options;
  Driver d(options, 1024, 256, overlap());
  d.submit(test::greedy_ids_request(tokens(8, 9), 120));
  for (int i = 0; i < 60; ++i) d.step();
  EXPECT_LT(d.scheduler().stats().new_token_ratio, options.init_new_token_ratio());
  d.run_until_idle();
  d.step();  // an idle round
  EXPECT_EQ(d.scheduler().stats().new_token_ratio, options.init_new_token_ratio());
  d.expect_reference_outputs();
}

// A chunked request's last chunk reserves the tokens it will generate, as a request taken whole
// does: a request that would take that room waits (SGLang's add_chunked_req).
TEST_P(SchedulerLoops, LastChunkReservesItsFutureTokens) {
  SchedulerOptions options;
  options.chunked_prefill_size = 32;
  options.enable_mixed_chunk = false;
  Driver d(options, 200, 256, overlap());
  const uint64_t a = d.submit(test::greedy_ids_request(tokens(48, 11), 100));
  d.step();  // a's first chunk (32 tokens)
  const uint64_t b = d.submit(test::greedy_ids_request(tokens(8, 12), 100));
  d.run_until_idle();
  // The batch with a's last chunk (16 tokens) may not hold b: 32 + 16 + a's 100 future tokens
  // leave 52 of 200 slots, short of b's 8 + 100.
  bool seen = false;
  for (const BatchRecord& batch : d.batches()) {
    const auto has = [&](uint64_t rid, int32_t len) {
      return std::find(batch.extends.begin(), batch.extends.end(), std::pair(rid, len)) !=
             batch.extends.end();
    };
    if (!has(a, 16)) continue;
    seen = true;
    EXPECT_FALSE(has(b, 8)) << "batch " << batch.id;
  }
  EXPECT_TRUE(seen);
  d.expect_reference_outputs();
}

TEST_P(SchedulerLoops, EvictionUnderPressureKeepsIntegrity) {
  Driver d({}, 120, 256, overlap());
  for (int i = 0; i < 30; ++i) {
    d.submit(test::greedy_ids_request(tokens(30, 100 + i), 5));
    d.run_until_idle();
  }
  EXPECT_LE(d.scheduler().stats().kv_used, 119);
  d.expect_reference_outputs();
}

TEST_P(SchedulerLoops, RetractionRecomputesAndEveryRequestCompletes) {
  SchedulerOptions options;
  options.max_running_requests = 16;
  Driver d(options, 200, 256, overlap());
  for (int i = 0; i < 12; ++i) d.submit(test::greedy_ids_request(tokens(10, 200 + i), 60));
  d.run_until_idle();
  EXPECT_GT(d.scheduler().stats().num_retracted_total, 0);
  d.expect_reference_outputs();
}

// return_hidden_states and return_routed_experts: every position from 0 to the last output but
// one, once each and in order, however the prompt was chunked, its cache served (only positions
// already reported) or the request retracted and recomputed (the fake runner's rows are
// {position, token}, its expert ids {token, position}; one request in three asks for neither,
// one for hidden states alone, one for both).
TEST_P(SchedulerLoops, HiddenStatesCoverEachPositionOnceThroughChunksAndRetractions) {
  SchedulerOptions options;
  options.max_running_requests = 16;
  options.chunked_prefill_size = 8;
  Driver d(options, 200, 256, overlap());
  std::vector<uint64_t> hidden;
  for (int i = 0; i < 12; ++i) {
    GenerateRequest r = test::greedy_ids_request(tokens(i % 2 ? 10 : 21, 200 + i % 3), 60);
    r.return_hidden_states = i % 3 != 0;
    r.return_routed_experts = i % 3 == 2;
    const uint64_t rid = d.submit(std::move(r));
    if (i % 3 != 0) hidden.push_back(rid);
  }
  d.run_until_idle();
  EXPECT_GT(d.scheduler().stats().num_retracted_total, 0);
  d.expect_reference_outputs();
  int32_t retracted = 0;
  for (uint64_t rid : hidden) {
    retracted += d.retractions()[rid] > 0;
    std::vector<int32_t> sequence = d.request(rid).input_ids;
    const std::vector<int32_t>& out = d.outputs()[rid];
    sequence.insert(sequence.end(), out.begin(), out.end() - 1);  // the last is never fed back
    const std::vector<float>& rows = d.hidden_states()[rid];
    ASSERT_EQ(rows.size(), 2 * sequence.size()) << "request " << rid;
    for (size_t p = 0; p < sequence.size(); ++p) {
      EXPECT_EQ(rows[2 * p], static_cast<float>(p)) << "request " << rid;
      EXPECT_EQ(rows[2 * p + 1], static_cast<float>(sequence[p])) << "request " << rid;
    }
    const std::vector<int32_t>& ids = d.routed_experts()[rid];
    if (!d.request(rid).return_routed_experts) {
      EXPECT_TRUE(ids.empty()) << "request " << rid;
      continue;
    }
    ASSERT_EQ(ids.size(), 2 * sequence.size()) << "request " << rid;
    for (size_t p = 0; p < sequence.size(); ++p) {
      EXPECT_EQ(ids[2 * p], sequence[p]) << "request " << rid;
      EXPECT_EQ(ids[2 * p + 1], static_cast<int32_t>(p)) << "request " << rid;
    }
  }
  EXPECT_GT(retracted, 0);
  for (const auto& [rid, rows] : d.hidden_states()) {
    if (std::find(hidden.begin(), hidden.end(), rid) == hidden.end()) EXPECT_TRUE(rows.empty());
  }
}

// Without chunked prefill a prompt fits one forward (checked at submit), but a retracted request
// resumes with its outputs too: with its prefix evicted it is recomputed in pieces a forward
// holds (max_prefill_tokens, plus the running decodes a mixed batch carries).
TEST_P(SchedulerLoops, RetractedRequestsResumeWithinAForwardWithoutChunking) {
  SchedulerOptions options;
  options.chunked_prefill_size = -1;
  options.max_prefill_tokens = 24;
  options.max_running_requests = 16;
  options.disable_radix_cache = true;
  Driver d(options, 200, 256, overlap());
  for (int i = 0; i < 12; ++i) d.submit(test::greedy_ids_request(tokens(20, 300 + i), 60));
  d.run_until_idle();
  EXPECT_GT(d.scheduler().stats().num_retracted_total, 0);
  int64_t resumed_in_pieces = 0;
  for (const BatchRecord& b : d.batches()) {
    EXPECT_LE(b.prefill_tokens, 24) << "batch " << b.id;
    EXPECT_LE(b.num_tokens, 24 + 16) << "batch " << b.id;
    for (const auto& [rid, len] : b.extends) resumed_in_pieces += len == 24;
  }
  EXPECT_GT(resumed_in_pieces, 0);
  d.expect_reference_outputs();
}

TEST_P(SchedulerLoops, AbortsFreeEverything) {
  Driver d({}, 512, 256, overlap());
  const uint64_t a = d.submit(test::greedy_ids_request(tokens(20, 7), 100));
  const uint64_t b = d.submit(test::greedy_ids_request(tokens(20, 8), 100));
  d.step();
  d.step();
  d.scheduler().abort(a, "test");
  const uint64_t c = d.submit(test::greedy_ids_request(tokens(20, 9), 100));
  d.scheduler().abort(c, "test");  // still waiting
  d.run_until_idle();
  d.collect();
  EXPECT_EQ(d.finished()[a].reason, FinishReason::kAbort);
  EXPECT_EQ(d.finished()[c].reason, FinishReason::kAbort);
  EXPECT_EQ(d.finished()[b].reason, FinishReason::kLength);
  EXPECT_TRUE(d.outputs()[c].empty());
  EXPECT_TRUE(d.scheduler().check_integrity().ok());
  EXPECT_TRUE(d.scheduler().flush_cache());
  EXPECT_EQ(d.scheduler().stats().kv_used, 0);
}

TEST_P(SchedulerLoops, StopTokensAndLengthFinish) {
  Driver d({}, 512, 64, overlap());
  GenerateRequest r = test::greedy_ids_request(tokens(8, 11), 40);
  const auto reference = test::fake_reference(r.input_ids, 40, kVocab, {});
  r.stop_token_ids = {reference[5]};
  const uint64_t stopped = d.submit(r);
  const uint64_t capped = d.submit(test::greedy_ids_request(tokens(60, 12), 100));  // context 64
  d.run_until_idle();
  EXPECT_EQ(d.finished()[stopped].reason, FinishReason::kStop);
  EXPECT_EQ(d.outputs()[stopped].back(), reference[5]);
  EXPECT_LE(d.outputs()[stopped].size(), 6u);
  EXPECT_EQ(d.finished()[capped].reason, FinishReason::kLength);
  EXPECT_EQ(d.outputs()[capped].size(), 4u);
}

TEST_P(SchedulerLoops, MixedChunkBatchesCarryDecodes) {
  SchedulerOptions options;
  options.enable_mixed_chunk = true;
  options.chunked_prefill_size = 8;
  Driver d(options, 1024, 256, overlap());
  d.submit(test::greedy_ids_request(tokens(6, 21), 20));
  d.step();
  d.step();
  d.submit(test::greedy_ids_request(tokens(30, 22), 5));
  d.run_until_idle();
  bool saw_mixed = false;
  for (const BatchRecord& b : d.batches()) saw_mixed = saw_mixed || b.mode == ForwardMode::kMixed;
  EXPECT_TRUE(saw_mixed);
  d.expect_reference_outputs();
}

// While requests decode, a prefill batch holds at most mixed_chunk_size tokens, its decodes
// counted (each of those steps is one every running request waits for); with nothing decoding
// it takes the whole chunk.
TEST_P(SchedulerLoops, MixedBatchesKeepToTheMixedChunkSize) {
  SchedulerOptions options;
  options.chunked_prefill_size = 64;
  options.mixed_chunk_size = 8;
  Driver d(options, 2048, 256, overlap());
  d.submit(test::greedy_ids_request(tokens(40, 31), 30));
  d.step();
  d.submit(test::greedy_ids_request(tokens(50, 32), 3));
  d.submit(test::greedy_ids_request(tokens(20, 33), 3));
  d.run_until_idle();
  int mixed = 0;
  for (const BatchRecord& b : d.batches()) {
    if (b.mode == ForwardMode::kMixed) {
      ++mixed;
      EXPECT_LE(b.num_tokens, 8);  // decodes included
    }
  }
  EXPECT_GE(mixed, 10);  // 70 prompt tokens in chunks of at most 7
  EXPECT_EQ(d.batches().front().mode, ForwardMode::kExtend);
  EXPECT_EQ(d.batches().front().extends.at(0).second, 40);  // nothing decoding: one chunk
  d.expect_reference_outputs();
}

TEST(SchedulePolicy, LpmOrdersByCachedPrefixLength) {
  SchedulerOptions options;
  options.policy = SchedulePolicy::kLpm;
  options.max_prefill_tokens = 40;  // one request per prefill batch
  Driver d(options, 1024, 256, false);
  const std::vector<int32_t> shared = tokens(36, 5);
  d.submit(test::greedy_ids_request(shared, 1));
  d.run_until_idle();
  std::vector<int32_t> hit = shared;
  hit.push_back(3);
  const uint64_t cold = d.submit(test::greedy_ids_request(tokens(37, 6), 1));
  const uint64_t warm = d.submit(test::greedy_ids_request(hit, 1));
  d.step();
  const BatchRecord& batch = d.batches().back();
  ASSERT_FALSE(batch.extends.empty());
  EXPECT_EQ(batch.extends[0].first, warm);
  d.run_until_idle();
  EXPECT_TRUE(d.finished().count(cold));
}

TEST(SchedulePolicy, LofAndFcfsOrders) {
  for (SchedulePolicy policy : {SchedulePolicy::kLof, SchedulePolicy::kFcfs}) {
    SchedulerOptions options;
    options.policy = policy;
    options.max_prefill_tokens = 8;
    Driver d(options, 1024, 256, false);
    const uint64_t short_out = d.submit(test::greedy_ids_request(tokens(8, 1), 2));
    const uint64_t long_out = d.submit(test::greedy_ids_request(tokens(8, 2), 50));
    d.step();
    EXPECT_EQ(d.batches().back().extends[0].first,
              policy == SchedulePolicy::kLof ? long_out : short_out);
  }
}

// In the overlap loop too: a's prompt is published while its batches are still in flight.
TEST_P(SchedulerLoops, InBatchPrefixCachingDefersASharer) {
  SchedulerOptions options;
  options.policy = SchedulePolicy::kLpm;
  Driver d(options, 1024, 256, overlap());
  const std::vector<int32_t> shared = tokens(40, 9);
  std::vector<int32_t> a = shared, b = shared;
  a.push_back(1);
  b.push_back(2);
  d.submit(test::greedy_ids_request(a, 2));
  d.submit(test::greedy_ids_request(b, 2));
  d.step();
  EXPECT_EQ(d.batches().back().extends.size(), 1u);  // b waits for a's prefix
  d.run_until_idle();
  EXPECT_EQ(d.scheduler().stats().cached_prompt_tokens_total, 40);
  d.expect_reference_outputs();
}

// n > 1 samples of one prompt: under every policy (fcfs here) the copies wait a round for the
// first to cache the prompt instead of each computing it; a prompt that only shares a prefix
// is not held back under fcfs.
TEST(SchedulePolicy, TheSamePromptIsComputedOnceUnderFcfs) {
  SchedulerOptions options;
  options.policy = SchedulePolicy::kFcfs;
  Driver d(options, 1024, 256, false);
  std::vector<int32_t> prompt = tokens(40, 9), other = prompt;
  prompt.push_back(1);
  other.push_back(2);
  for (int i = 0; i < 3; ++i) d.submit(test::greedy_ids_request(prompt, 2));
  d.submit(test::greedy_ids_request(other, 2));
  d.step();
  EXPECT_EQ(d.batches().back().extends.size(), 2u);  // one copy, and the other prompt
  d.run_until_idle();
  EXPECT_EQ(d.scheduler().stats().cached_prompt_tokens_total, 2 * 40);
  d.expect_reference_outputs();
}

// Requests the cache could not serve (prompt logprobs from the start) do not wait for a
// sharer's prefix: they are admitted together (they waited one round each, one per batch).
TEST(SchedulePolicy, RequestsTheCacheCannotServeDoNotWaitForASharer) {
  SchedulerOptions options;
  options.policy = SchedulePolicy::kLpm;
  Driver d(options, 1024, 256, false);
  const std::vector<int32_t> shared = tokens(40, 9);
  for (int32_t i = 1; i <= 3; ++i) {
    std::vector<int32_t> prompt = shared;
    prompt.push_back(i);
    GenerateRequest r = test::greedy_ids_request(prompt, 2);
    r.return_logprob = true;
    r.logprob_start_len = 0;
    d.submit(std::move(r));
  }
  d.step();
  EXPECT_EQ(d.batches().back().extends.size(), 3u);
  d.run_until_idle();
}

// Neither do the copies of a prompt in other cache namespaces: the first copy's KV cannot serve
// them.
TEST(SchedulePolicy, ThePromptsOfOtherNamespacesDoNotWaitForIt) {
  SchedulerOptions options;
  options.policy = SchedulePolicy::kFcfs;
  Driver d(options, 1024, 256, false);
  const std::vector<int32_t> prompt = tokens(40, 9);
  for (const char* ns : {"", "a", "b", "a"}) {
    GenerateRequest r = test::greedy_ids_request(prompt, 2);
    r.cache_namespace = ns;
    d.submit(std::move(r));
  }
  d.step();
  EXPECT_EQ(d.batches().back().extends.size(), 3u);  // the second "a" waits for the first
  d.run_until_idle();
  EXPECT_EQ(d.scheduler().stats().cached_prompt_tokens_total, 39);
  d.expect_reference_outputs();
}

TEST(SchedulePolicy, DfsWeightAndRandomComplete) {
  for (SchedulePolicy policy : {SchedulePolicy::kDfsWeight, SchedulePolicy::kRandom}) {
    SchedulerOptions options;
    options.policy = policy;
    options.max_prefill_tokens = 64;
    Driver d(options, 2048, 256, false);
    // Groups sharing a prefix; the fourth in a cache namespace of its own, whose requests are
    // ordered from that namespace's root.
    auto group_request = [](int g, int32_t last, int32_t max_new) {
      std::vector<int32_t> p = tokens(20, 50 + g);
      if (last > 0) p.push_back(last);
      GenerateRequest r = test::greedy_ids_request(p, max_new);
      if (g == 3) r.cache_namespace = "tenant";
      return r;
    };
    for (int g = 0; g < 4; ++g) d.submit(group_request(g, 0, 2));
    d.run_until_idle();
    for (int i = 0; i < 16; ++i) d.submit(group_request(i % 4, 1 + i, 3));
    d.run_until_idle();
    d.expect_reference_outputs();
  }
}

TEST(SchedulerTimeouts, WaitingAndRunningRequestsTimeOut) {
  SchedulerOptions options;
  options.max_running_requests = 1;
  options.waiting_timeout_s = 0.05;
  options.running_timeout_s = 0.05;
  Driver d(options, 1024, 256, false);
  const uint64_t runs = d.submit(test::greedy_ids_request(tokens(8, 1), 200));
  const uint64_t waits = d.submit(test::greedy_ids_request(tokens(8, 2), 200));
  d.step();
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  d.run_until_idle();
  EXPECT_EQ(d.finished()[runs].reason, FinishReason::kAbort);
  EXPECT_EQ(d.finished()[runs].message, "request timed out while running");
  EXPECT_EQ(d.finished()[waits].reason, FinishReason::kAbort);
  EXPECT_EQ(d.finished()[waits].message, "request timed out while waiting");
  EXPECT_TRUE(d.outputs()[waits].empty());
}

TEST(SchedulePolicy, ParseNames) {
  EXPECT_EQ(*parse_schedule_policy("dfs-weight"), SchedulePolicy::kDfsWeight);
  EXPECT_FALSE(parse_schedule_policy("sjf").ok());
}

TEST(SchedulerValidate, RejectsImpossibleRequests) {
  Scheduler s({}, 100, 64, {kEos}, kVocab);
  EXPECT_FALSE(s.validate(test::greedy_ids_request({}, 4)).ok());
  EXPECT_FALSE(
      s.validate(test::greedy_ids_request(tokens(64, 1), 4)).ok());  // prompt fills the context
  EXPECT_FALSE(s.validate(test::greedy_ids_request(tokens(60, 1), 200)).ok() &&
               false);  // clamped to the context: fine
  EXPECT_TRUE(s.validate(test::greedy_ids_request(tokens(60, 1), 200)).ok());
  // A KV cache smaller than the context: max_new_tokens is clamped to it (SGLang's max_req_len),
  // only a prompt that leaves no slot is refused.
  Scheduler tiny({}, 20, 64, {kEos}, kVocab);  // 19 allocatable slots
  EXPECT_TRUE(tiny.validate(test::greedy_ids_request(tokens(10, 1), 30)).ok());
  EXPECT_TRUE(tiny.validate(test::greedy_ids_request(tokens(18, 1), 30)).ok());
  const Status full = tiny.validate(test::greedy_ids_request(tokens(19, 1), 1));
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.message().find("the KV cache holds 19"), std::string::npos) << full.to_string();
  EXPECT_TRUE(tiny.validate(test::greedy_ids_request(tokens(19, 1), 0)).ok());  // generates none
}

TEST(SchedulerValidate, MaxNewTokensStopsWhereTheRequestFillsTheKvCache) {
  Driver d({}, 40, 256, /*overlap=*/false);  // 39 allocatable slots, a 256-token context
  GenerateRequest r = test::greedy_ids_request(tokens(10, 1), 100);
  r.ignore_eos = true;
  const uint64_t rid = d.submit(r);
  d.run_until_idle();
  EXPECT_EQ(d.outputs()[rid].size(), 29u);
  EXPECT_EQ(d.finished()[rid].reason, FinishReason::kLength);
  EXPECT_EQ(d.outputs()[rid], test::fake_reference(r.input_ids, 29, kVocab, {}));
}

// Thousands of requests: random arrivals, lengths, stop tokens and aborts, a tiny KV pool,
// chunking; integrity after every step; every non-aborted request matches its reference. With
// n-gram drafts the fake model remembers one token, so its outputs cycle and drafts stand at
// random lengths; rejected drafts' slots are freed at once and never read again (the fake
// model's "KV" is the token a slot holds: a slot reused wrongly changes the outputs).
// `priorities`: priority scheduling on, each request a random priority (preemptions).
SchedulerStats randomized_soak(bool overlap, bool ngram, bool priorities = false) {
  std::mt19937 rng((overlap ? 2 : 1) + (ngram ? 10 : 0) + (priorities ? 20 : 0));
  SchedulerOptions options;
  options.chunked_prefill_size = 24;
  options.max_running_requests = 12;
  options.max_prefill_tokens = 48;
  options.policy = overlap ? SchedulePolicy::kLpm : SchedulePolicy::kFcfs;
  if (ngram) {
    options.speculative.algorithm = speculative::SpeculativeAlgorithm::kNgram;
    options.speculative.num_draft_tokens = 6;
  }
  options.priority.enabled = priorities;
  Driver d(options, 160, 128, overlap);
  if (ngram) d.runner().set_memory(1);
  std::vector<uint64_t> live;
  int submitted = 0;
  for (int step = 0; step < 20000 && (submitted < 2000 || !d.scheduler().idle()); ++step) {
    if (submitted < 2000 && rng() % 3 == 0) {
      const int32_t len = 1 + static_cast<int32_t>(rng() % 40);
      std::vector<int32_t> prompt =
          tokens(len, static_cast<int32_t>(rng() % 8));  // shared prefixes
      prompt.back() = 1 + static_cast<int32_t>(rng() % (kVocab - 1));
      GenerateRequest r = test::greedy_ids_request(prompt, 1 + static_cast<int32_t>(rng() % 30));
      r.ignore_eos = rng() % 2;
      if (rng() % 4 == 0) r.cache_namespace = "ns" + std::to_string(rng() % 2);
      if (priorities) r.priority = static_cast<int64_t>(rng() % 40);
      live.push_back(d.submit(r));
      ++submitted;
    }
    if (!live.empty() && rng() % 40 == 0) {
      d.scheduler().abort(live[rng() % live.size()], "random abort");
    }
    d.step();
  }
  d.run_until_idle();
  EXPECT_EQ(submitted, 2000);
  d.expect_reference_outputs();
  // The soak must have exercised the hard paths.
  const SchedulerStats stats = d.scheduler().stats();
  EXPECT_GT(stats.num_retracted_total, 0);
  EXPECT_GT(stats.cached_prompt_tokens_total, 0);
  int aborted = 0;
  for (const auto& [rid, f] : d.finished()) aborted += f.reason == FinishReason::kAbort;
  EXPECT_GT(aborted, 0);
  std::cout << "soak: retracted " << stats.num_retracted_total << ", cached prompt tokens "
            << stats.cached_prompt_tokens_total << " of " << stats.prompt_tokens_total
            << ", aborted " << aborted << ", verify steps " << stats.spec_verify_steps
            << ", drafts " << stats.spec_draft_tokens << " (" << stats.spec_accepted_tokens
            << " accepted)\n";
  EXPECT_TRUE(d.scheduler().flush_cache());
  EXPECT_EQ(d.scheduler().stats().kv_used, 0);
  return stats;
}

TEST_P(SchedulerLoops, RandomizedSoak) { randomized_soak(overlap(), /*ngram=*/false); }

TEST_P(SchedulerLoops, RandomizedSoakWithPriorities) {
  const SchedulerStats stats = randomized_soak(overlap(), /*ngram=*/false, /*priorities=*/true);
  EXPECT_GT(stats.num_preempted_total, 10);
}

TEST_P(SchedulerLoops, RandomizedSoakWithNgramDrafts) {
  const SchedulerStats stats = randomized_soak(overlap(), /*ngram=*/true);
  EXPECT_GT(stats.spec_verify_steps, 100);
  EXPECT_GT(stats.spec_accepted_tokens, 0);
  EXPECT_GT(stats.spec_draft_tokens, stats.spec_accepted_tokens);  // some rejected too
}

INSTANTIATE_TEST_SUITE_P(Loops, SchedulerLoops, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "overlap" : "normal"; });

}  // namespace
}  // namespace sgl::scheduler
