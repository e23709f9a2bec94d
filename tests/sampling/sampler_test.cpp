// Sampler tests on constructed distributions: greedy, seeds, the top-k/top-p/min-p sets, ties,
// the id-order draw, the shared integer arithmetic, and a second implementation of the rules.
#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "kernels/sampling_math.h"
#include "sampling/nan_logits.h"
#include "sampling/sampling_distribution.h"

namespace sgl::sampling {
namespace {

namespace sm = kernels::sampling_math;

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

// --enable-nan-detection: NaN logits become -1e5 (never drawn next to finite ones), counted per
// row; the rest of the row is untouched, so its distribution is the finite tokens'.
TEST(NanLogits, ReplacedAndCountedPerRow) {
  const float nan = std::nanf("");
  std::vector<float> values = {nan,       2.f, nan, -1.f,  // row 0: two NaN
                               0.5f,      1.f, 2.f, 3.f,   // row 1: none
                               -INFINITY, nan, 0.f, 1.f};  // row 2: one, beside -inf
  const std::vector<float> before = values;
  const Tensor t(values.data(), DType::kF32, {3, 4});
  EXPECT_EQ(replace_nan_logits(t), 2);
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(before[i])) {
      EXPECT_EQ(values[i], kNanLogitReplacement) << i;
    } else {
      EXPECT_EQ(values[i], before[i]) << i;
    }
  }
  EXPECT_EQ(replace_nan_logits(t), 0);  // nothing left to replace
  // Sampling the replaced row 0 at temperature 1 never picks the replaced tokens.
  SamplingParams p;
  p.temperature = 1.f;
  p.seed = 7;
  for (int32_t id : draw({values[0], values[1], values[2], values[3]}, p, 200)) {
    EXPECT_TRUE(id == 1 || id == 3) << id;
  }
}

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

TEST(Sampler, TokenIdsLogprobsAreLogSoftmaxAtTheAskedIdsPerRow) {
  // Row 0: kProbs; row 1: the same, reversed. Row 0 asks ids 3, 0, 3 (a repeat), row 1 none.
  auto logits = logits_for(kProbs);
  auto reversed = logits;
  std::reverse(reversed.begin(), reversed.end());
  logits.insert(logits.end(), reversed.begin(), reversed.end());
  SamplingParams p;
  p.seed = 11;
  SamplingBatch batch{{p, p}, {0, 0}, {4, 0}, true, {{3, 0, 3}, {}}};
  const auto out = Sampler().sample(Tensor(logits.data(), DType::kF32, {2, 8}), batch);
  ASSERT_EQ(out.token_ids_logprobs.size(), 2u);
  ASSERT_EQ(out.token_ids_logprobs[0].size(), 3u);
  EXPECT_NEAR(out.token_ids_logprobs[0][0], std::log(0.25), 1e-6);
  EXPECT_NEAR(out.token_ids_logprobs[0][1], std::log(0.05), 1e-6);
  EXPECT_EQ(out.token_ids_logprobs[0][2], out.token_ids_logprobs[0][0]);
  EXPECT_TRUE(out.token_ids_logprobs[1].empty());
  // The same values as the top-k and the sampled token's where they list the same id.
  for (const TokenLogprob& t : out.top_logprobs[0]) {
    if (t.id == 3) EXPECT_EQ(t.logprob, out.token_ids_logprobs[0][0]);
  }
  batch.token_ids_logprob = {{out.next_token_ids[0]}, {out.next_token_ids[1]}};
  const auto again = Sampler().sample(Tensor(logits.data(), DType::kF32, {2, 8}), batch);
  EXPECT_EQ(again.token_ids_logprobs[0][0], again.next_token_logprobs[0]);
  EXPECT_EQ(again.token_ids_logprobs[1][0], again.next_token_logprobs[1]);
  // Not asked: nothing computed.
  batch.token_ids_logprob.clear();
  EXPECT_TRUE(Sampler()
                  .sample(Tensor(logits.data(), DType::kF32, {2, 8}), batch)
                  .token_ids_logprobs.empty());
}

TEST(Sampler, TopKCutsATieByLowerId) {
  SamplingParams p;
  p.seed = 5;
  p.top_k = 3;
  std::set<int32_t> seen;
  for (int32_t id : draw(std::vector<float>(8, 0.5f), p, 2000)) seen.insert(id);
  EXPECT_EQ(seen, (std::set<int32_t>{0, 1, 2}));
}

TEST(Sampler, TopPComparesTheExactMassBefore) {
  // Four equal tokens: the mass before the third is exactly 0.5, which does not exceed 0.5.
  std::vector<float> logits = {1.f, 1.f, 1.f, 1.f, -INFINITY, -INFINITY};
  SamplingParams p;
  p.seed = 6;
  p.top_p = 0.5f;
  std::set<int32_t> seen;
  for (int32_t id : draw(logits, p, 2000)) seen.insert(id);
  EXPECT_EQ(seen, (std::set<int32_t>{0, 1, 2}));
}

TEST(Sampler, MinPOneKeepsOnlyTheTiedMaxima) {
  SamplingParams p;
  p.seed = 8;
  p.min_p = 1.f;
  std::set<int32_t> seen;
  for (int32_t id : draw({0.f, 2.f, 1.f, 2.f, 1.999f}, p, 1000)) seen.insert(id);
  EXPECT_EQ(seen, (std::set<int32_t>{1, 3}));
}

TEST(Sampler, DrawIsTheInverseCdfInIdOrder) {
  // Weights 1/4, 1/2, 1/4 of the mass: u < 1/4 draws id 0, u < 3/4 id 1, else id 2 (in rank
  // order the middle token would come first).
  const std::vector<float> logits = {0.f, std::log(2.f), 0.f};
  SamplingParams p;
  p.seed = 11;
  const auto ids = draw(logits, p, 300);
  const double w0 = static_cast<double>(sm::token_weight(0.f, logits[1], 1.0));
  const double total = 2 * w0 + static_cast<double>(sm::kMaxWeight);
  for (int step = 0; step < 300; ++step) {
    const double u = uniform_from_counter(11, step);
    const int32_t expected = u < w0 / total ? 0 : (u < (w0 + sm::kMaxWeight) / total ? 1 : 2);
    EXPECT_EQ(ids[step], expected) << "u = " << u;
  }
}

TEST(Sampler, TokensBelowTheWeightFloorAreNeverDrawn) {
  SamplingParams p;
  p.seed = 12;
  p.temperature = 2.f;
  for (int32_t id : draw({0.f, -70.f, -1e30f, -INFINITY}, p, 500)) EXPECT_EQ(id, 0);
}

TEST(Sampler, AllMinusInfinityFallsBackToTheFirstToken) {
  SamplingParams p;
  p.seed = 13;
  for (int32_t id : draw(std::vector<float>(5, -INFINITY), p, 10)) EXPECT_EQ(id, 0);
}

// The rules of sampler.h written a second way, token by token (quadratic; small rows only): a
// token is kept if it is a candidate, fewer than top_k candidates rank before it, and their
// weight is within the top-p limit.
int32_t sample_by_definition(const std::vector<float>& x, const SamplingParams& p, uint64_t step) {
  const int64_t n = static_cast<int64_t>(x.size());
  if (p.is_greedy()) return static_cast<int32_t>(std::max_element(x.begin(), x.end()) - x.begin());
  const float max_logit = *std::max_element(x.begin(), x.end());
  std::vector<uint64_t> w(n);
  uint64_t total = 0;
  for (int64_t i = 0; i < n; ++i)
    total += w[i] = sm::token_weight(x[i], max_logit, 1.0 / p.temperature);
  const uint64_t min_weight = sm::min_p_weight(p.min_p), limit = sm::top_p_limit(p.top_p, total);
  std::vector<uint64_t> kept(n, 0);
  uint64_t kept_total = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (w[i] < min_weight) continue;
    int64_t rank = 0;
    uint64_t before = 0;
    for (int64_t j = 0; j < n; ++j) {
      if (w[j] >= min_weight && (w[j] > w[i] || (w[j] == w[i] && j < i))) {
        ++rank;
        before += w[j];
      }
    }
    if ((p.top_k <= 0 || rank < p.top_k) && before <= limit) kept_total += kept[i] = w[i];
  }
  const uint64_t target = sm::scale_draw(sm::random_bits53(*p.seed, step), kept_total);
  uint64_t running = 0;
  for (int64_t i = 0; i < n; ++i) {
    running += kept[i];
    if (running > target) return static_cast<int32_t>(i);
  }
  return -1;
}

TEST(Sampler, AgreesWithTheRulesTokenByToken) {
  std::mt19937_64 rng(21);
  const float temperatures[] = {0.3f, 1.f, 2.f};
  const int32_t top_ks[] = {-1, 2, 5};
  const float top_ps[] = {1.f, 0.9f, 0.5f, 0.01f};
  const float min_ps[] = {0.f, 0.05f, 0.5f};
  Sampler sampler;
  int rows = 0;
  for (int trial = 0; trial < 6; ++trial) {
    for (float t : temperatures) {
      for (int32_t k : top_ks) {
        for (float top_p : top_ps) {
          for (float min_p : min_ps) {
            // Coarse values, so ties are common.
            std::vector<float> x(1 + rng() % 40);
            for (float& v : x)
              v = static_cast<float>(rng() % 9) * 0.5f - (rng() % 7 == 0 ? 50.f : 0.f);
            SamplingParams p;
            p.temperature = t;
            p.top_k = k;
            p.top_p = top_p;
            p.min_p = min_p;
            p.seed = rng();
            const uint64_t step = rng() % 1000;
            SamplingBatch batch{{p}, {step}, {0}, false};
            const Tensor tensor(x.data(), DType::kF32, {1, static_cast<int64_t>(x.size())});
            ASSERT_EQ(sampler.sample(tensor, batch).next_token_ids[0],
                      sample_by_definition(x, p, step))
                << "T " << t << " top_k " << k << " top_p " << top_p << " min_p " << min_p;
            ++rows;
          }
        }
      }
    }
  }
  EXPECT_EQ(rows, 6 * 3 * 3 * 4 * 3);
}

// sampling_distribution: softmax(logits / T) without filters, renormalised over the kept set
// with them, one-hot where greedy; and the draws of 8000 seeds land on each token at its rate.
TEST(SamplingDistribution, IsWhatTheSamplerDraws) {
  const std::vector<float> logits = logits_for(kProbs);
  SamplingParams p;
  p.temperature = 0.7f;
  std::vector<double> softmax(kProbs.size());
  double sum = 0;
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  for (size_t i = 0; i < kProbs.size(); ++i) {
    sum += softmax[i] = std::exp((double{logits[i]} - max_logit) / double{0.7f});
  }
  const auto plain = sampling_distribution(logits.data(), 8, p);
  for (size_t i = 0; i < kProbs.size(); ++i) EXPECT_NEAR(plain[i], softmax[i] / sum, 1e-12) << i;
  p.top_k = 3;
  const auto top3 = sampling_distribution(logits.data(), 8, p);
  const double kept = softmax[1] + softmax[3] + softmax[4];
  for (size_t i = 0; i < kProbs.size(); ++i) {
    EXPECT_NEAR(top3[i], i == 1 || i == 3 || i == 4 ? softmax[i] / kept : 0.0, 1e-12) << i;
  }
  p.seed = 11;
  std::vector<int> counts(kProbs.size());
  for (int32_t id : draw(logits, p, 8000)) ++counts[id];
  for (size_t i = 0; i < kProbs.size(); ++i) {
    const double sd = std::sqrt(8000 * top3[i] * (1 - top3[i]));
    EXPECT_NEAR(counts[i], 8000 * top3[i], 4 * sd + 1e-9) << i;
  }
  p.temperature = 0.f;
  EXPECT_EQ(sampling_distribution(logits.data(), 8, p)[1], 1.0);
}

TEST(SamplingMath, ExpIsAccurateAndBitStable) {
  for (double t = -32.0; t <= 0.0; t += 1.0 / 1024) {
    EXPECT_NEAR(sm::exp_scaled(t, 0) / std::exp(t), 1.0, 4e-16) << t;
  }
  // Golden bits: a changed bit here (e.g. an fma contracted differently) breaks host/device parity.
  const std::pair<double, double> golden[] = {{-0x1.999999999999ap-4, 0x1.cf46d99d52b3ap-1},
                                              {-0x1p+0, 0x1.78b56362cef38p-2},
                                              {-0x1.4p+1, 0x1.50385c094f425p-4},
                                              {-0x1.aaaaaaaaaaaabp+1, 0x1.243dc957d03eep-5},
                                              {-0x1.12p+4, 0x1.39d4ec6b9f3d3p-25},
                                              {-0x1.fp+4, 0x1.36121e24d3bbap-45}};
  for (const auto& [t, e] : golden) EXPECT_EQ(sm::exp_scaled(t, 0), e) << t;
}

TEST(SamplingMath, TokenWeights) {
  EXPECT_EQ(sm::token_weight(3.f, 3.f, 1.0 / 0.7), sm::kMaxWeight);
  EXPECT_EQ(sm::token_weight(-1.5f, 2.25f, 1.0), 827457120888ull);
  EXPECT_EQ(sm::token_weight(0.1f, 0.2f, 1.0 / static_cast<double>(0.3f)), 25210704453231ull);
  EXPECT_EQ(sm::token_weight(0.f, 31.f, 1.0), 1u);  // e^-31 * 2^45 = 1.2
  EXPECT_EQ(sm::token_weight(0.f, 31.5f, 1.0), 0u);
  EXPECT_EQ(sm::token_weight(-INFINITY, 0.f, 1.0), 0u);
  EXPECT_EQ(sm::token_weight(NAN, 0.f, 1.0), 0u);
  EXPECT_EQ(sm::min_p_weight(0.f), 1u);
  EXPECT_EQ(sm::min_p_weight(0.5f), sm::kMaxWeight / 2);
  EXPECT_EQ(sm::min_p_weight(1.f), sm::kMaxWeight);
  EXPECT_EQ(sm::top_p_limit(1.f, 123), ~uint64_t{0});
  EXPECT_EQ(sm::top_p_limit(0.5f, 1001), 500u);
}

TEST(SamplingMath, ScaledDrawIsTheExactFloor) {
  EXPECT_EQ(sm::scale_draw(uint64_t{1} << 52, 10), 5u);  // u = 1/2
  // (1 - 2^-53) * 2^62 = 2^62 - 2^9
  EXPECT_EQ(sm::scale_draw((uint64_t{1} << 53) - 1, uint64_t{1} << 62), (uint64_t{1} << 62) - 512);
  EXPECT_EQ(sm::scale_draw(0, 12345), 0u);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t bits = rng() >> 11, mass = rng() >> 1;
    const uint64_t r = sm::scale_draw(bits, mass);
    const auto exact = static_cast<unsigned __int128>(bits) * mass;
    EXPECT_LT(r, mass);
    EXPECT_EQ(r, static_cast<uint64_t>(exact >> 53));
  }
  EXPECT_EQ(sm::random_bits53(42, 7), 466803804666104ull);
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
