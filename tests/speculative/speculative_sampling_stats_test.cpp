// Speculative decoding keeps the target's distribution under sampling (issue #23): thousands of
// seeded requests at temperature > 0 through engines drafting EAGLE chains, EAGLE trees and
// n-grams on the real stories260K model, with drafts accepted (a fitted EAGLE head,
// scripts/make_eagle_heads.py --fitted-head-for; prompts that quote themselves for n-grams).
// For step 1 (after the prompt) and steps 2..4 given each of their most frequent prefixes, the
// tokens drawn are compared with the exact distribution the sampler draws from
// (sampling::sampling_distribution over the plain model's logits, temperature, top-k and top-p
// applied as the sampler applies them) by Pearson's chi-square test (goodness_of_fit.h).
//
// False alarms: every comparison must reach p > alpha / m, where m counts every comparison the
// suite plans (Bonferroni), so over the choice of seeds the whole suite fails wrongly with
// probability at most alpha = 1e-3. The seeds are fixed: the test is deterministic (up to the
// float rounding of logits between batch shapes, far below what moves a p-value).
// Power: the same samples against a distribution that is wrong by a realistic bug's amount (a
// temperature 1.5 times off; the conditional of another prefix, as a verify row that read a
// wrong context would draw) must be rejected at the same threshold.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "eagle_heads.h"
#include "engine/model_engine.h"
#include "sampling/sampling_distribution.h"
#include "scheduler/greedy_ids_request.h"
#include "speculative/goodness_of_fit.h"
#include "stream_outcome.h"
#include "test_data.h"

namespace sgl::engine {
namespace {

using speculative::SpeculativeAlgorithm;

const std::filesystem::path kHeads = test::eagle_heads_dir();
constexpr const char* kModel = "stories260K";
constexpr const char* kHead = "stories260K-eagle-fitted";

constexpr int32_t kRequests = 2000;      // seeded requests per configuration
constexpr int32_t kNewTokens = 6;        // each: room for trees of depth 4 after the first token
constexpr int32_t kTestedSteps = 4;      // steps 1..4
constexpr int32_t kPrefixesPerStep = 3;  // steps 2..4: their most frequent prefixes
constexpr int64_t kMinGroup = 100;       // samples a prefix needs to be tested
constexpr double kFamilyAlpha = 1e-3;

struct Config {
  const char* name;
  SpeculativeAlgorithm algorithm;
  int32_t num_steps;  // EAGLE
  int32_t topk;       // EAGLE: 1 chains, more trees
  int32_t num_draft_tokens;
  float temperature;
  int32_t top_k = -1;
  float top_p = 1.f;
  int32_t golden_case = 0;
  bool quote_prompt = false;  // prompt, greedy continuation, prompt again: n-gram drafts hit
};

const std::vector<Config> kConfigs = {
    {"eagle_chain", SpeculativeAlgorithm::kEagle, 3, 1, 4, 1.0f, -1, 1.f, 1},
    {"eagle_tree", SpeculativeAlgorithm::kEagle, 3, 3, 8, 1.0f, -1, 1.f, 4},
    {"eagle_tree_top_k_top_p", SpeculativeAlgorithm::kEagle, 2, 4, 6, 0.8f, 10, 0.95f, 5},
    {"ngram", SpeculativeAlgorithm::kNgram, 0, 1, 4, 1.0f, -1, 1.f, 3, true},
};
// gtest names a configuration by its name (not its bytes).
void PrintTo(const Config& c, std::ostream* os) { *os << c.name; }

// Every comparison the suite plans (step 1, then kPrefixesPerStep per later step), whether or
// not a prefix turns out frequent enough: the Bonferroni divisor.
const double kAlpha =
    kFamilyAlpha /
    static_cast<double>(kConfigs.size() * (1 + (kTestedSteps - 1) * kPrefixesPerStep));

sampling::SamplingParams sampling_of(const Config& c) {
  sampling::SamplingParams p;
  p.temperature = c.temperature;
  p.top_k = c.top_k;
  p.top_p = c.top_p;
  return p;
}

std::vector<int32_t> prompt_of(const Config& c) {
  const nlohmann::json golden = test::golden(kModel)["cases"][c.golden_case];
  std::vector<int32_t> p = golden["prompt_ids"].get<std::vector<int32_t>>();
  if (c.quote_prompt) {
    const auto cont = golden["greedy_ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> first = p;
    p.insert(p.end(), cont.begin(), cont.begin() + 24);
    p.insert(p.end(), first.begin(), first.end());
  }
  return p;
}

Result<ModelEngine> launch(const Config* speculative) {
  runner::ModelRunnerOptions ro;
  ro.num_kv_slots = 24000;
  EngineOptions eo;
  eo.scheduler.max_running_requests = 256;
  eo.disable_overlap_schedule = true;
  if (speculative != nullptr) {
    speculative::SpeculativeOptions& spec = eo.scheduler.speculative;
    spec.algorithm = speculative->algorithm;
    spec.num_draft_tokens = speculative->num_draft_tokens;
    if (spec.algorithm == SpeculativeAlgorithm::kEagle) {
      spec.draft_model_path = (kHeads / kHead).string();
      spec.num_steps = speculative->num_steps;
      spec.eagle_topk = speculative->topk;
    }
    EXPECT_TRUE(spec.validate(true).ok());
  }
  return launch_model_engine(test::model_dir(kModel), ro, eo);
}

// The plain model's raw logits (as log-softmax, the same up to a constant) after each of
// `contexts`: f32 [contexts.size()][vocab].
std::vector<std::vector<float>> plain_logits(const std::vector<std::vector<int32_t>>& contexts,
                                             int32_t vocab) {
  auto me = launch(nullptr);
  EXPECT_TRUE(me.ok()) << me.status().to_string();
  if (!me.ok()) return {};
  std::vector<GenerateRequest> requests;
  for (const auto& context : contexts) {
    GenerateRequest r = test::greedy_ids_request(context, 1);
    r.return_logprob = true;
    r.top_logprobs_num = vocab;
    requests.push_back(std::move(r));
  }
  std::vector<std::vector<float>> out;
  for (const test::Outcome& o : test::submit_and_collect(*me->engine, requests)) {
    EXPECT_EQ(o.top.size(), 1u);
    std::vector<float> logits(static_cast<size_t>(vocab), -INFINITY);
    if (!o.top.empty()) {
      EXPECT_EQ(o.top[0].size(), static_cast<size_t>(vocab));
      for (const sampling::TokenLogprob& t : o.top[0]) logits[t.id] = t.logprob;
    }
    out.push_back(std::move(logits));
  }
  return out;
}

// One tested group: the token drawn at `step` (1-based) after `prefix`, over the requests whose
// first step - 1 tokens are `prefix`.
struct Group {
  int32_t step;
  std::vector<int32_t> prefix;
  std::map<int32_t, int64_t> counts;
  int64_t size = 0;
};

std::vector<Group> groups_of(const std::vector<test::Outcome>& outcomes) {
  std::vector<Group> out;
  for (int32_t step = 1; step <= kTestedSteps; ++step) {
    std::map<std::vector<int32_t>, Group> by_prefix;
    for (const test::Outcome& o : outcomes) {
      if (o.ids.size() < static_cast<size_t>(step)) continue;
      const std::vector<int32_t> prefix(o.ids.begin(), o.ids.begin() + step - 1);
      Group& g = by_prefix[prefix];
      g.step = step;
      g.prefix = prefix;
      ++g.counts[o.ids[step - 1]];
      ++g.size;
    }
    std::vector<Group> ranked;
    for (auto& [prefix, g] : by_prefix) ranked.push_back(std::move(g));
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const Group& a, const Group& b) { return a.size > b.size; });
    const size_t n = step == 1 ? 1 : static_cast<size_t>(kPrefixesPerStep);
    for (size_t i = 0; i < std::min(n, ranked.size()) && ranked[i].size >= kMinGroup; ++i) {
      out.push_back(std::move(ranked[i]));
    }
  }
  return out;
}

std::string describe(const Group& g) {
  std::string s = "step " + std::to_string(g.step) + " after [";
  for (size_t i = 0; i < g.prefix.size(); ++i) s += (i ? " " : "") + std::to_string(g.prefix[i]);
  return s + "]";
}

class SpeculativeSampling : public ::testing::TestWithParam<Config> {};

TEST_P(SpeculativeSampling, TokensFollowTheTargetDistributionFamilyAlpha1e3) {
  const Config c = GetParam();
  const auto vocab =
      test::read_json(test::model_dir(kModel) / "config.json")["vocab_size"].get<int32_t>();
  const std::vector<int32_t> prompt = prompt_of(c);
  const auto config_index = static_cast<uint64_t>(
      std::find_if(kConfigs.begin(), kConfigs.end(),
                   [&](const Config& k) { return std::string(k.name) == c.name; }) -
      kConfigs.begin());

  // The speculative run: seeds differ across configurations, so no two share samples.
  std::vector<GenerateRequest> requests;
  for (int32_t i = 0; i < kRequests; ++i) {
    GenerateRequest r = test::greedy_ids_request(prompt, kNewTokens);
    r.sampling = sampling_of(c);
    r.sampling.seed = 1'000'000 * (config_index + 1) + static_cast<uint64_t>(i);
    requests.push_back(std::move(r));
  }
  auto me = launch(&c);
  ASSERT_TRUE(me.ok()) << me.status().to_string();
  const std::vector<test::Outcome> outcomes = test::submit_and_collect(*me->engine, requests);
  const scheduler::SchedulerStats stats = me->engine->get_stats().scheduler;
  ASSERT_EQ(outcomes.size(), requests.size());
  for (const test::Outcome& o : outcomes) ASSERT_EQ(o.ids.size(), static_cast<size_t>(kNewTokens));
  // Every token after an accepted draft was sampled at a verify row past the first: without
  // many of them the test would say nothing about speculation.
  std::cout << c.name << ": " << stats.spec_verify_steps << " verify steps, "
            << stats.spec_accepted_tokens << " of " << stats.spec_draft_tokens
            << " drafts accepted\n";
  EXPECT_GT(stats.spec_accepted_tokens, kRequests / 4) << c.name << ": drafts rarely accepted";

  // The exact distributions: the plain model's logits after prompt + prefix, through the
  // sampler's own rules.
  const std::vector<Group> groups = groups_of(outcomes);
  std::vector<std::vector<int32_t>> contexts;
  for (const Group& g : groups) {
    std::vector<int32_t> context = prompt;
    context.insert(context.end(), g.prefix.begin(), g.prefix.end());
    contexts.push_back(std::move(context));
  }
  const std::vector<std::vector<float>> logits = plain_logits(contexts, vocab);
  ASSERT_EQ(logits.size(), groups.size());
  const sampling::SamplingParams params = sampling_of(c);
  sampling::SamplingParams hotter = params;
  hotter.temperature *= 1.5f;

  ASSERT_GE(groups.back().step, 3) << "no step after a verify's first row is tested";
  int32_t chi_square_tested = 0;  // groups with at least two bins expected 5 times or more
  for (size_t i = 0; i < groups.size(); ++i) {
    const Group& g = groups[i];
    const auto exact = sampling::sampling_distribution(logits[i].data(), vocab, params);
    const test::GoodnessOfFit fit = test::chi_square_fit(g.counts, exact);
    std::cout << "  " << describe(g) << ": " << fit.to_string() << "\n";
    EXPECT_GT(fit.p_value, kAlpha)
        << c.name << ", " << describe(g) << ": " << fit.to_string()
        << "; the per-comparison threshold keeps the suite's false-alarm rate at 1e-3";
    chi_square_tested += fit.rare_expected < 0.0 && fit.bins >= 2;
    if (std::getenv("SGL_DUMP_BINS") != nullptr) {  // to look into a failure: each token's draws
      for (const auto& [id, n] : g.counts) {
        std::cout << "    " << id << ": " << n << " vs " << exact[id] * g.size << "\n";
      }
    }
  }

  EXPECT_GE(chi_square_tested, 5) << "too few prefixes with a distribution to test";

  // Power. Step 1's samples against the target 1.5 times hotter.
  const auto hot = sampling::sampling_distribution(logits[0].data(), vocab, hotter);
  const test::GoodnessOfFit hot_fit = test::chi_square_fit(groups[0].counts, hot);
  std::cout << "  control, step 1 at 1.5 T: " << hot_fit.to_string() << "\n";
  EXPECT_LT(hot_fit.p_value, kAlpha) << "the test cannot tell a 1.5x temperature apart";
  // Each later step's most frequent prefix against its runner-up's exact distribution.
  for (size_t i = 1; i + 1 < groups.size(); ++i) {
    if (groups[i - 1].step == groups[i].step || groups[i + 1].step != groups[i].step) continue;
    const auto other = sampling::sampling_distribution(logits[i + 1].data(), vocab, params);
    const test::GoodnessOfFit fit = test::chi_square_fit(groups[i].counts, other);
    std::cout << "  control, " << describe(groups[i]) << " against " << describe(groups[i + 1])
              << ": " << fit.to_string() << "\n";
    EXPECT_LT(fit.p_value, kAlpha)
        << "the test cannot tell " << describe(groups[i]) << " from " << describe(groups[i + 1]);
  }
}

INSTANTIATE_TEST_SUITE_P(Configs, SpeculativeSampling, ::testing::ValuesIn(kConfigs),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace sgl::engine
