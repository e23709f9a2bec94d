// DraftLengthPolicy against simulated step times: it tries each draft count, settles on the
// fastest, keeps batch-size buckets apart, and follows a workload whose best count changes.
#include "speculative/draft_length_policy.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

namespace sgl::speculative {
namespace {

// Runs `steps` decode steps of `batch_size` requests, each generating tokens(k) per request in
// seconds(k); returns how often each count was chosen.
std::map<int32_t, int> simulate(DraftLengthPolicy& policy, int32_t batch_size, int steps,
                                const std::function<double(int32_t)>& tokens,
                                const std::function<double(int32_t)>& seconds) {
  std::map<int32_t, int> chosen;
  for (int i = 0; i < steps; ++i) {
    const int32_t k = policy.choose(batch_size).drafts;
    ++chosen[k];
    policy.record(batch_size, k, static_cast<int64_t>(tokens(k) * batch_size), seconds(k));
  }
  return chosen;
}

TEST(DraftLengthPolicy, TriesEveryCountMostDraftsFirstThenTheFastest) {
  DraftLengthPolicy policy(4);
  for (int32_t k = 4; k >= 0; --k) {
    const DraftLengthPolicy::Choice c = policy.choose(1);
    EXPECT_EQ(c.drafts, k);
    EXPECT_TRUE(c.exploring);
    // 2 drafts is best: 2.5 tokens a step at 1.5x a plain step's time.
    policy.record(1, k, k == 2 ? 25 : 10, k == 2 ? 1.5 : 1.0);
  }
  const DraftLengthPolicy::Choice c = policy.choose(1);
  EXPECT_EQ(c.drafts, 2);
  EXPECT_FALSE(c.exploring);
  EXPECT_NEAR(policy.rate(1, 2), 25 / 1.5, 1e-9);
  EXPECT_EQ(policy.rate(1, 9), 0);
}

TEST(DraftLengthPolicy, SettlesOnPlainDecodingWhenDraftsRarelyStand) {
  DraftLengthPolicy policy(5, 64);
  // Accept length 1.1 whatever the count, each draft 10% of a plain step.
  const auto chosen = simulate(
      policy, 8, 640, [](int32_t k) { return k == 0 ? 1.0 : 1.1; },
      [](int32_t k) { return 1.0 + 0.1 * k; });
  EXPECT_GE(chosen.at(0), 600) << "plain decoding should win nearly every step";
}

TEST(DraftLengthPolicy, BucketsByBatchSizeLearnApart) {
  DraftLengthPolicy policy(3, 1000);
  // Batch 1: verifying is nearly free, 3 drafts give 3 tokens. Batch 64: a verify step costs
  // 4x, so plain decoding wins there.
  auto tokens = [](int32_t k) { return 1.0 + k * 2.0 / 3.0; };
  simulate(policy, 1, 20, tokens, [](int32_t k) { return 1.0 + 0.05 * k; });
  simulate(policy, 64, 20, tokens, [](int32_t k) { return k == 0 ? 1.0 : 4.0; });
  EXPECT_EQ(policy.choose(1).drafts, 3);
  EXPECT_EQ(policy.choose(64).drafts, 0);
  EXPECT_EQ(policy.choose(100).drafts, 0);   // 64..127: one bucket
  EXPECT_TRUE(policy.choose(40).exploring);  // 32..63: never measured
}

TEST(DraftLengthPolicy, FollowsAWorkloadWhoseBestCountChanges) {
  DraftLengthPolicy policy(4, 16);
  // First drafts stand (accept length 1 + k), then the workload turns unpredictable.
  auto cost = [](int32_t k) { return 1.0 + 0.1 * k; };
  simulate(
      policy, 1, 100, [](int32_t k) { return 1.0 + k; }, cost);
  EXPECT_EQ(policy.choose(1).drafts, 4);
  simulate(
      policy, 1, 400, [](int32_t) { return 1.0; }, cost);
  EXPECT_EQ(policy.choose(1).drafts, 0);
}

TEST(DraftLengthPolicy, AveragesOverBurstsOfStandingDrafts) {
  // N-gram drafts: 24 steps where every draft stands (quoted code), then 24 where none does
  // (free text), and so on. Over the run 4 drafts a step yield 3 tokens at 1.4x a plain step's
  // time, about twice plain decoding's rate: the policy must keep drafting through the bad
  // stretches (a choice that follows the last few steps falls back to plain decoding in each,
  // and finds the next good one late).
  DraftLengthPolicy policy(4, 64);
  double tokens = 0, seconds = 0;
  for (int stretch = 0; stretch < 40; ++stretch) {
    const bool stand = stretch % 2 == 0;
    for (int step = 0; step < 24; ++step) {
      const int32_t k = policy.choose(1).drafts;
      const double t = stand ? 1.0 + k : 1.0, s = 1.0 + 0.1 * k;
      policy.record(1, k, static_cast<int64_t>(t), s);
      tokens += t;
      seconds += s;
    }
  }
  const double fixed_rate = 3.0 / 1.4;  // every step with 4 drafts
  EXPECT_GT(tokens / seconds, 0.9 * fixed_rate) << tokens / seconds << " tokens per second";
}

TEST(DraftLengthPolicy, IgnoresStepsWithoutTime) {
  DraftLengthPolicy policy(2);
  policy.record(1, 2, 10, 0.0);
  policy.record(0, 2, 10, 1.0);
  EXPECT_EQ(policy.rate(1, 2), 0);
  EXPECT_EQ(policy.choose(1).drafts, 2);  // still untried
}

}  // namespace
}  // namespace sgl::speculative
