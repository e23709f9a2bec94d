// Request fields on the real stories260K model through the engine, in every scheduler
// configuration: prompt logprobs equal the golden teacher-forced top-k (chunked, warm radix
// cache, mixed batches, scoring-only requests); frequency / presence penalties equal a reference
// loop over unpenalized logprobs; repetition penalty equals the golden last logits processed
// by hand; logit_bias forces and forbids tokens; min_new_tokens delays EOS and stop ids;
// token_ids_logprob equals the top-k, the sampled token's and the prompt tokens' logprobs where
// they list the same id (logit processing included).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "engine/model_engine.h"
#include "scheduler/greedy_ids_request.h"
#include "stream_outcome.h"
#include "test_data.h"

namespace sgl::engine {
namespace {

constexpr int32_t kEos = 2;
constexpr int32_t kPeriod = 426;  // "."
constexpr int32_t kLily = 317;    // "▁Lily"
constexpr int32_t kVocab = 512;
constexpr double kTol = 1e-3;

struct Config {
  const char* name;
  bool radix;
  int64_t chunk;
  bool overlap;
  bool mixed;
  int64_t scoring = 0;  // SchedulerOptions::max_scoring_tokens (0: the engine's default)
};

using test::collect;
using test::Outcome;

// A golden case's prompt followed by the first `n` tokens of its greedy continuation.
std::vector<int32_t> golden_sequence(const nlohmann::json& c, int n) {
  std::vector<int32_t> ids = c["prompt_ids"].get<std::vector<int32_t>>();
  const auto cont = c["greedy_ids"].get<std::vector<int32_t>>();
  ids.insert(ids.end(), cont.begin(), cont.begin() + n);
  return ids;
}

// The first maximum, as the greedy sampler picks it.
int32_t argmax(const std::vector<double>& row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

double log_softmax_at(const std::vector<double>& row, int32_t id) {
  const double m = *std::max_element(row.begin(), row.end());
  double sum = 0;
  for (double v : row) sum += std::exp(v - m);
  return row[id] - m - std::log(sum);
}

class RequestFields : public ::testing::TestWithParam<Config> {
 protected:
  void SetUp() override {
    const Config c = GetParam();
    EngineOptions eo;
    eo.scheduler.disable_radix_cache = !c.radix;
    eo.scheduler.chunked_prefill_size = c.chunk;
    eo.scheduler.enable_mixed_chunk = c.mixed;
    if (c.scoring > 0) eo.scheduler.max_scoring_tokens = c.scoring;
    eo.scheduler.max_running_requests = 16;
    eo.disable_overlap_schedule = !c.overlap;
    runner::ModelRunnerOptions ro;
    ro.num_kv_slots = 4096;
    auto me = launch_model_engine(test::model_dir("stories260K"), ro, eo);
    ASSERT_TRUE(me.ok()) << me.status().to_string();
    me_ = std::move(*me);
    me_.engine->set_check_integrity(true);
    golden_ = test::golden("stories260K");
  }

  void TearDown() override {
    if (me_.engine) {
      EXPECT_TRUE(me_.engine->last_integrity().ok()) << me_.engine->last_integrity().to_string();
    }
  }

  std::shared_ptr<RequestStream> submit(const GenerateRequest& r) {
    auto s = me_.engine->submit(r);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    return s.ok() ? *s : nullptr;
  }
  Outcome run(const GenerateRequest& r) {
    auto s = submit(r);
    return s ? collect(*s) : Outcome{};
  }

  // Checks prompt logprobs rows [first_row, L - 1) of the golden case's teacher-forced
  // sequence `seq` (prompt + 16 greedy tokens): the top-10 and the next token's logprob.
  void expect_golden_rows(const nlohmann::json& c, const std::vector<int32_t>& seq,
                          const sampling::PromptLogprobs& got, int32_t first_row) {
    const auto& top_ids = c["prefill"]["topk_ids"];
    const auto& top_lps = c["prefill"]["topk_logprobs"];
    ASSERT_EQ(got.begin, first_row);
    ASSERT_EQ(got.end(), static_cast<int32_t>(seq.size()) - 1);
    ASSERT_EQ(got.top.size(), got.logprobs.size());
    for (int32_t p = first_row; p < got.end(); ++p) {
      const auto ids = top_ids[p].get<std::vector<int32_t>>();
      const auto lps = top_lps[p].get<std::vector<double>>();
      const auto& top = got.top[p - first_row];
      ASSERT_EQ(top.size(), ids.size()) << "row " << p;
      for (size_t k = 0; k < ids.size(); ++k) {
        EXPECT_EQ(top[k].id, ids[k]) << "row " << p << " rank " << k;
        EXPECT_NEAR(top[k].logprob, lps[k], kTol) << "row " << p << " rank " << k;
      }
      const int32_t target = seq[p + 1];
      const float lp = got.logprobs[p - first_row];
      const auto at = std::find(ids.begin(), ids.end(), target);
      if (at != ids.end()) {
        EXPECT_NEAR(lp, lps[at - ids.begin()], kTol) << "row " << p;
      } else {
        EXPECT_LT(lp, lps.back() + kTol) << "row " << p;
      }
    }
  }

  ModelEngine me_;
  nlohmann::json golden_;
};

TEST_P(RequestFields, PromptLogprobsEqualTheGoldenTeacherForcedTopK) {
  // Background decoders, so that prefills run beside decodes (MIXED where enabled).
  std::vector<std::shared_ptr<RequestStream>> background;
  for (int i = 0; i < 3; ++i) {
    background.push_back(submit(test::greedy_ids_request(golden_["cases"][i]["prompt_ids"], 48)));
  }
  std::vector<std::shared_ptr<RequestStream>> streams;
  std::vector<std::vector<int32_t>> seqs;
  for (const auto& c : golden_["cases"]) {
    seqs.push_back(golden_sequence(c, 16));
    GenerateRequest r = test::greedy_ids_request(seqs.back(), 2);
    r.return_logprob = true;
    r.top_logprobs_num = 10;
    r.logprob_start_len = 0;
    streams.push_back(submit(r));
  }
  for (size_t i = 0; i < streams.size(); ++i) {
    const auto& c = golden_["cases"][i];
    Outcome out = collect(*streams[i]);
    ASSERT_TRUE(out.input.has_value()) << "case " << i;
    SCOPED_TRACE("case " + std::to_string(i));
    expect_golden_rows(c, seqs[i], *out.input, 0);
    // The sampling row is the last position: the golden continuation's 17th token.
    ASSERT_EQ(out.ids.size(), 2u);
    EXPECT_EQ(out.ids[0], c["greedy_ids"][16].get<int32_t>());
    EXPECT_EQ(out.top[0][0].id, c["prefill"]["topk_ids"][seqs[i].size() - 1][0].get<int32_t>());
  }
  for (size_t i = 0; i < background.size(); ++i) {
    EXPECT_EQ(collect(*background[i]).ids,
              golden_["cases"][i]["greedy_ids"].get<std::vector<int32_t>>())
        << "background " << i;
  }
}

TEST_P(RequestFields, PromptLogprobsBypassTheCacheOnlyFromTheirStart) {
  const auto& c = golden_["cases"][3];
  const std::vector<int32_t> seq = golden_sequence(c, 16);
  run(test::greedy_ids_request(seq, 1));  // the radix cache now holds the sequence (when enabled)
  for (int32_t start : {0, 10}) {
    GenerateRequest r = test::greedy_ids_request(seq, 1);
    r.return_logprob = true;
    r.top_logprobs_num = 10;
    r.logprob_start_len = start;
    Outcome out = run(r);
    ASSERT_TRUE(out.input.has_value()) << "start " << start;
    SCOPED_TRACE("start " + std::to_string(start));
    expect_golden_rows(c, seq, *out.input, start);
    EXPECT_EQ(out.usage.cached_tokens, GetParam().radix ? start : 0);
  }
  // Without return_logprob the start is ignored and the cache serves the whole prompt.
  GenerateRequest plain = test::greedy_ids_request(seq, 1);
  plain.logprob_start_len = 0;
  Outcome out = run(plain);
  EXPECT_FALSE(out.input.has_value());
  EXPECT_EQ(out.usage.cached_tokens, GetParam().radix ? static_cast<int>(seq.size()) - 1 : 0);
}

TEST_P(RequestFields, ScoringOnlyRequestsReturnPromptLogprobsAndNoTokens) {
  const auto& c = golden_["cases"][1];
  const std::vector<int32_t> seq = golden_sequence(c, 16);
  GenerateRequest r = test::greedy_ids_request(seq, 0);
  r.return_logprob = true;
  r.top_logprobs_num = 10;
  r.logprob_start_len = 0;
  Outcome out = run(r);
  EXPECT_TRUE(out.ids.empty());
  EXPECT_EQ(out.finish.reason, scheduler::FinishReason::kLength);
  ASSERT_TRUE(out.input.has_value());
  expect_golden_rows(c, seq, *out.input, 0);
  // Nothing to score (start at the last prompt token) and no tokens: finishes at once.
  r.logprob_start_len = static_cast<int32_t>(seq.size()) - 1;
  out = run(r);
  EXPECT_TRUE(out.ids.empty());
  EXPECT_FALSE(out.input.has_value());
  // A start past the prompt is refused.
  r.logprob_start_len = static_cast<int32_t>(seq.size());
  EXPECT_EQ(me_.engine->submit(r).status().code(), StatusCode::kInvalidArgument);
}

// Greedy decoding with frequency / presence penalties, recomputed step by step from the
// engine's unpenalized full-vocabulary logprobs (the penalties shift logits; log-softmax
// differs from them by a per-row constant, so argmax and the processed logprob agree).
TEST_P(RequestFields, FrequencyAndPresencePenaltiesMatchAReferenceLoop) {
  const std::vector<int32_t> prompt = golden_["cases"][0]["prompt_ids"];
  // The golden continuation's first repeat is its 26th token (a second ".").
  constexpr int kSteps = 40;
  for (auto [frequency, presence] : {std::pair{1.0f, 0.0f}, {0.0f, 2.0f}, {0.6f, 0.7f}}) {
    SCOPED_TRACE("frequency " + std::to_string(frequency) + " presence " +
                 std::to_string(presence));
    std::vector<int32_t> expected;
    std::vector<double> expected_logprobs;
    std::map<int32_t, int> counts;
    for (int step = 0; step < kSteps; ++step) {
      std::vector<int32_t> seq = prompt;
      seq.insert(seq.end(), expected.begin(), expected.end());
      GenerateRequest r = test::greedy_ids_request(seq, 1);
      r.return_logprob = true;
      r.top_logprobs_num = kVocab;
      Outcome raw = run(r);
      ASSERT_EQ(raw.top.size(), 1u);
      std::vector<double> row(kVocab, 0.0);
      for (const auto& t : raw.top[0]) row[t.id] = t.logprob;
      for (const auto& [id, n] : counts) row[id] -= frequency * n + presence;
      const int32_t next = argmax(row);
      expected.push_back(next);
      expected_logprobs.push_back(log_softmax_at(row, next));
      ++counts[next];
    }
    GenerateRequest r = test::greedy_ids_request(prompt, kSteps);
    r.sampling.frequency_penalty = frequency;
    r.sampling.presence_penalty = presence;
    r.return_logprob = true;
    // Beside unpenalized requests, which must stay exactly as they were.
    auto plain = submit(test::greedy_ids_request(golden_["cases"][2]["prompt_ids"], 48));
    auto penalized = submit(r);
    Outcome out = collect(*penalized);
    EXPECT_EQ(out.ids, expected);
    ASSERT_EQ(out.logprobs.size(), expected_logprobs.size());
    for (size_t i = 0; i < expected_logprobs.size(); ++i) {
      EXPECT_NEAR(out.logprobs[i], expected_logprobs[i], kTol) << "step " << i;
    }
    const std::vector<int32_t> unpenalized(golden_["cases"][0]["greedy_ids"].begin(),
                                           golden_["cases"][0]["greedy_ids"].begin() + kSteps);
    EXPECT_NE(out.ids, unpenalized);
    auto repeats = [](std::vector<int32_t> ids) {
      std::sort(ids.begin(), ids.end());
      return ids.end() - std::unique(ids.begin(), ids.end());
    };
    EXPECT_LT(repeats(out.ids), repeats(unpenalized));
    EXPECT_EQ(collect(*plain).ids, golden_["cases"][2]["greedy_ids"].get<std::vector<int32_t>>());
    // Again, with the prompt (and more) in the radix cache: same tokens.
    EXPECT_EQ(run(r).ids, expected);
  }
}

TEST_P(RequestFields, RepetitionPenaltyMatchesTheGoldenLastLogits) {
  int changed = 0;
  for (const auto& c : golden_["cases"]) {
    const std::vector<int32_t> seq = golden_sequence(c, 16);
    const auto last = c["prefill"]["last_logits"].get<std::vector<double>>();
    for (float penalty : {0.5f, 1.3f, 2.0f}) {
      std::vector<double> row = last;
      std::vector<int32_t> seen = seq;
      std::sort(seen.begin(), seen.end());
      seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
      for (int32_t id : seen) row[id] = row[id] > 0 ? row[id] / penalty : row[id] * penalty;
      const int32_t expected = argmax(row);
      GenerateRequest r = test::greedy_ids_request(seq, 1);
      r.sampling.repetition_penalty = penalty;
      r.return_logprob = true;
      for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1) {
          // The second pass finds its prompt cached, in a request row another prompt just
          // used: the processor must still see this request's own prompt.
          run(test::greedy_ids_request(std::vector<int32_t>(seq.size() + 4, 5), 1));
        }
        Outcome out = run(r);
        ASSERT_EQ(out.ids.size(), 1u);
        EXPECT_EQ(out.ids[0], expected) << c["prompt"] << " penalty " << penalty;
        EXPECT_NEAR(out.logprobs[0], log_softmax_at(row, expected), kTol);
      }
      changed += expected != c["greedy_ids"][16].get<int32_t>();
    }
  }
  EXPECT_GT(changed, 0) << "no case changed its token: the test would not notice a no-op";
}

TEST_P(RequestFields, LogitBiasForcesAndForbidsTokens) {
  const auto& c = golden_["cases"][0];
  GenerateRequest r = test::greedy_ids_request(c["prompt_ids"], 8);
  r.sampling.logit_bias = {{kLily, 100.f}};
  EXPECT_EQ(run(r).ids, std::vector<int32_t>(8, kLily));
  r.max_new_tokens = 1;
  r.sampling.logit_bias = {{c["greedy_ids"][0].get<int32_t>(), -100.f}};
  EXPECT_EQ(run(r).ids, std::vector<int32_t>{c["steps_top5"][0]["ids"][1].get<int32_t>()});
  r.sampling.logit_bias = {{kVocab, 1.f}};
  EXPECT_EQ(me_.engine->submit(r).status().code(), StatusCode::kInvalidArgument);
}

// The value `ids` report for `id` at one position, when `id` is among them.
std::optional<float> value_of(const std::vector<int32_t>& ids, const std::vector<float>& values,
                              int32_t id) {
  const auto at = std::find(ids.begin(), ids.end(), id);
  if (at == ids.end()) return std::nullopt;
  return values.at(at - ids.begin());
}

TEST_P(RequestFields, TokenIdsLogprobsEqualTheListedLogprobsOfTheSameIds) {
  const auto& c = golden_["cases"][2];
  const std::vector<int32_t> seq = golden_sequence(c, 16);
  const auto greedy = c["greedy_ids"].get<std::vector<int32_t>>();
  // The golden continuation's tokens (so the sampled ones are asked for), EOS, a repeat.
  std::vector<int32_t> ids(greedy.begin() + 16, greedy.begin() + 22);
  ids.insert(ids.end(), {kEos, kPeriod, kLily, greedy[16]});
  for (const bool bias : {false, true}) {
    SCOPED_TRACE(bias ? "with logit_bias (host logit processing)" : "plain");
    GenerateRequest r = test::greedy_ids_request(seq, 6);
    r.return_logprob = true;
    r.top_logprobs_num = 10;
    r.logprob_start_len = 3;
    r.token_ids_logprob = ids;
    // The processed distribution: a bias on a token never sampled moves every logprob.
    if (bias) r.sampling.logit_bias = {{kLily, 3.f}};
    Outcome out = run(r);
    ASSERT_EQ(out.ids.size(), 6u);
    ASSERT_EQ(out.token_ids.size(), out.ids.size());
    int matched_top = 0, matched_sampled = 0;
    for (size_t k = 0; k < out.ids.size(); ++k) {
      ASSERT_EQ(out.token_ids[k].size(), ids.size()) << "step " << k;
      EXPECT_EQ(out.token_ids[k].front(), out.token_ids[k].back()) << "the repeat, step " << k;
      if (auto v = value_of(ids, out.token_ids[k], out.ids[k])) {
        EXPECT_NEAR(*v, out.logprobs[k], 1e-6) << "step " << k;
        ++matched_sampled;
      }
      for (const sampling::TokenLogprob& t : out.top[k]) {
        if (auto v = value_of(ids, out.token_ids[k], t.id)) {
          EXPECT_NEAR(*v, t.logprob, 1e-6) << "step " << k << " id " << t.id;
          ++matched_top;
        }
      }
    }
    EXPECT_GT(matched_sampled, 0);
    EXPECT_GT(matched_top, 0);
    // The prompt positions scored: one list per position, equal to the listed logprobs.
    ASSERT_TRUE(out.input.has_value());
    const sampling::PromptLogprobs& in = *out.input;
    ASSERT_EQ(in.token_ids.size(), in.logprobs.size());
    ASSERT_EQ(in.begin, 3);
    int matched_prompt = 0;
    for (int32_t row = 0; row < in.size(); ++row) {
      ASSERT_EQ(in.token_ids[row].size(), ids.size());
      if (auto v = value_of(ids, in.token_ids[row], seq[in.begin + row + 1])) {
        EXPECT_NEAR(*v, in.logprobs[row], 1e-6) << "row " << row;
        ++matched_prompt;
      }
      for (const sampling::TokenLogprob& t : in.top[row]) {
        if (auto v = value_of(ids, in.token_ids[row], t.id)) EXPECT_NEAR(*v, t.logprob, 1e-6);
      }
    }
    EXPECT_GT(matched_prompt, 0);
  }
  // Without return_logprob nothing is reported.
  GenerateRequest plain = test::greedy_ids_request(seq, 2);
  plain.token_ids_logprob = ids;
  EXPECT_TRUE(run(plain).token_ids.empty());
  // Ids outside the vocabulary, and too many ids, are refused by name.
  GenerateRequest bad = test::greedy_ids_request(seq, 2);
  bad.return_logprob = true;
  bad.token_ids_logprob = {1, kVocab};
  auto refused = me_.engine->submit(bad);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("token_ids_logprob: token id 512"), std::string::npos)
      << refused.status().to_string();
  bad.token_ids_logprob = {-1};
  EXPECT_EQ(me_.engine->submit(bad).status().code(), StatusCode::kInvalidArgument);
  bad.token_ids_logprob.assign(sampling::kMaxTokenIdsLogprob + 1, 1);
  EXPECT_EQ(me_.engine->submit(bad).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(RequestFields, MinNewTokensDelaysEosAndStopTokenIds) {
  const auto& c = golden_["cases"][0];
  const auto greedy_ids = c["greedy_ids"].get<std::vector<int32_t>>();
  const auto first_period = std::find(greedy_ids.begin(), greedy_ids.end(), kPeriod);
  ASSERT_NE(first_period, greedy_ids.end());
  GenerateRequest r = test::greedy_ids_request(c["prompt_ids"], 40);
  r.ignore_eos = false;
  r.stop_token_ids = {kPeriod};
  Outcome out = run(r);
  EXPECT_EQ(out.ids, std::vector<int32_t>(greedy_ids.begin(), first_period + 1));
  EXPECT_EQ(out.finish.reason, scheduler::FinishReason::kStop);

  r.sampling.min_new_tokens = 20;
  out = run(r);
  ASSERT_GE(out.ids.size(), 20u);
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_NE(out.ids[i], kPeriod) << i;
    EXPECT_NE(out.ids[i], kEos) << i;
  }
  if (out.finish.reason == scheduler::FinishReason::kStop) EXPECT_EQ(out.ids.back(), kPeriod);

  // EOS made overwhelming: without min_new_tokens it is the first token; with 5 it is the 6th.
  GenerateRequest e = test::greedy_ids_request(c["prompt_ids"], 40);
  e.ignore_eos = false;
  e.sampling.logit_bias = {{kEos, 100.f}};
  EXPECT_EQ(run(e).ids, std::vector<int32_t>{kEos});
  e.sampling.min_new_tokens = 5;
  out = run(e);
  ASSERT_EQ(out.ids.size(), 6u);
  EXPECT_EQ(out.ids[5], kEos);
  EXPECT_EQ(std::count(out.ids.begin(), out.ids.end(), kEos), 1);
  EXPECT_EQ(out.finish.reason, scheduler::FinishReason::kStop);
  EXPECT_EQ(out.finish.matched_token, kEos);
}

INSTANTIATE_TEST_SUITE_P(Configs, RequestFields,
                         ::testing::Values(Config{"default", true, 8192, true, false},
                                           Config{"no_overlap", true, 8192, false, false},
                                           Config{"chunk7", true, 7, true, false},
                                           Config{"chunk5_no_radix", false, 5, false, false},
                                           Config{"mixed_chunk8", true, 8, true, true},
                                           Config{"mixed_scoring6", true, 8192, true, true, 6}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace sgl::engine
