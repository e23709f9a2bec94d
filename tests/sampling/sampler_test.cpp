// Sampler tests on constructed distributions: greedy, seeds, and the top-k/top-p/min-p sets.
#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

namespace sgl::sampling {
namespace {

// Logits whose softmax is exactly `probs`.
std::vector<float> logits_for(const std::vector<double>& probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(p > 0 ? static_cast<float>(std::log(p)) : -INFINITY);
  return out;
}

std::vector<int32_t> draw(std::vector<float> logits, SamplingParams params, int n) {
  Sampler sampler;
  std::vector<int32_t> ids;
  for (int step = 0; step < n; ++step) {
    SamplingBatch batch{{params}, {static_cast<uint64_t>(step)}, {0}, false};
    Tensor t(logits.data(), DType::kF32, {1, static_cast<int64_t>(logits.size())});
    ids.push_back(sampler.sample(t, batch).next_token_ids[0]);
  }
  return ids;
}

const std::vector<double> kProbs = {0.05, 0.30, 0.02, 0.25, 0.15, 0.10, 0.08, 0.05};

TEST(Sampler, TemperatureZeroIsGreedyFirstMaximum) {
  std::vector<float> logits = {1.f, 3.f, 3.f, -2.f};
  SamplingParams p;
  p.temperature = 0.f;
  for (int32_t id : draw(logits, p, 20)) EXPECT_EQ(id, 1);
}

TEST(Sampler, SameSeedSameDrawsDifferentSeedDifferentDraws) {
  SamplingParams p;
  p.seed = 42;
  const auto a = draw(logits_for(kProbs), p, 200), b = draw(logits_for(kProbs), p, 200);
  EXPECT_EQ(a, b);
  p.seed = 43;
  EXPECT_NE(draw(logits_for(kProbs), p, 200), a);
}

TEST(Sampler, PlainSamplingFollowsTheDistribution) {
  SamplingParams p;
  p.seed = 7;
  std::map<int32_t, int> counts;
  const int n = 20000;
  for (int32_t id : draw(logits_for(kProbs), p, n)) ++counts[id];
  for (size_t i = 0; i < kProbs.size(); ++i) {
    EXPECT_NEAR(counts[static_cast<int32_t>(i)] / double(n), kProbs[i], 0.015) << i;
  }
}

TEST(Sampler, TopKKeepsOnlyTheKMostLikely) {
  SamplingParams p;
  p.seed = 1;
  p.top_k = 3;  // {1, 3, 4}
  std::set<int32_t> seen;
  for (int32_t id : draw(logits_for(kProbs), p, 2000)) seen.insert(id);
  EXPECT_EQ(seen, (std::set<int32_t>{1, 3, 4}));
}

TEST(Sampler, TopPKeepsTheSmallestPrefixReachingP) {
  SamplingParams p;
  p.seed = 2;
  p.top_p = 0.6f;  // 0.30 + 0.25 = 0.55 < 0.6, so 0.15 (id 4) is still needed
  std::set<int32_t> seen;
  for (int32_t id : draw(logits_for(kProbs), p, 3000)) seen.insert(id);
  EXPECT_EQ(seen, (std::set<int32_t>{1, 3, 4}));
  p.top_p = 0.2f;  // the top token alone
  for (int32_t id : draw(logits_for(kProbs), p, 200)) EXPECT_EQ(id, 1);
}

TEST(Sampler, MinPDropsTokensBelowFractionOfTheMax) {
  SamplingParams p;
  p.seed = 3;
  p.min_p = 0.4f;  // threshold 0.12: keeps 0.30, 0.25, 0.15
  std::set<int32_t> seen;
  for (int32_t id : draw(logits_for(kProbs), p, 3000)) seen.insert(id);
  EXPECT_EQ(seen, (std::set<int32_t>{1, 3, 4}));
}

TEST(Sampler, CombinedFiltersStayInsideEveryAllowedSet) {
  SamplingParams p;
  p.seed = 4;
  p.top_k = 5;
  p.top_p = 0.75f;
  p.min_p = 0.5f;
  p.temperature = 0.7f;
  for (int32_t id : draw(logits_for(kProbs), p, 2000)) EXPECT_TRUE(id == 1 || id == 3) << id;
}

TEST(Sampler, DrawsDoNotDependOnBatchNeighbours) {
  SamplingParams p;
  p.seed = 9;
  auto logits = logits_for(kProbs);
  std::vector<float> two = logits;
  two.insert(two.end(), logits.begin(), logits.end());
  SamplingParams other;
  other.seed = 1234;
  Sampler sampler;
  for (uint64_t step = 0; step < 50; ++step) {
    SamplingBatch alone{{p}, {step}, {0}, false};
    SamplingBatch pair{{other, p}, {step, step}, {0, 0}, false};
    const auto a = sampler.sample(Tensor(logits.data(), DType::kF32, {1, 8}), alone);
    const auto b = sampler.sample(Tensor(two.data(), DType::kF32, {2, 8}), pair);
    EXPECT_EQ(a.next_token_ids[0], b.next_token_ids[1]);
  }
}

TEST(Sampler, LogprobsAreLogSoftmaxOfRawLogits) {
  auto logits = logits_for(kProbs);
  SamplingParams p;
  p.temperature = 0.f;
  SamplingBatch batch{{p}, {0}, {3}, true};
  const auto out = Sampler().sample(Tensor(logits.data(), DType::kF32, {1, 8}), batch);
  EXPECT_EQ(out.next_token_ids[0], 1);
  EXPECT_NEAR(out.next_token_logprobs[0], std::log(0.30), 1e-6);
  ASSERT_EQ(out.top_logprobs[0].size(), 3u);
  EXPECT_EQ(out.top_logprobs[0][1].id, 3);
  EXPECT_NEAR(out.top_logprobs[0][2].logprob, std::log(0.15), 1e-6);
}

TEST(SamplingParams, ValidateNamesTheField) {
  SamplingParams p;
  p.top_p = 0.f;
  EXPECT_NE(p.validate().message().find("top_p"), std::string::npos);
  p = {};
  p.temperature = -1.f;
  EXPECT_NE(p.validate().message().find("temperature"), std::string::npos);
  p = {};
  p.min_p = 2.f;
  EXPECT_FALSE(p.validate().ok());
  p = {};
  p.top_k = -5;
  EXPECT_FALSE(p.validate().ok());
  EXPECT_TRUE(SamplingParams{}.validate().ok());
}

}  // namespace
}  // namespace sgl::sampling
