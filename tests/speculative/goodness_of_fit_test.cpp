// The chi-square goodness-of-fit helper: the survival function against closed forms and
// published quantiles, the pooling of sparse bins, and p-values that are uniform when the
// samples do follow the stated distribution (so a threshold alpha fails a fraction alpha).
#include "speculative/goodness_of_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace sgl::test {
namespace {

TEST(RegularizedGammaQ, MatchesClosedForms) {
  for (double x : {0.0, 0.01, 0.5, 1.0, 2.5, 10.0, 40.0, 300.0}) {
    EXPECT_NEAR(regularized_gamma_q(1.0, x), std::exp(-x), 1e-15 + 1e-12 * std::exp(-x)) << x;
    // a = 1/2: Q = erfc(sqrt(x)).
    EXPECT_NEAR(regularized_gamma_q(0.5, x), std::erfc(std::sqrt(x)),
                1e-15 + 1e-12 * std::erfc(std::sqrt(x)))
        << x;
  }
  // Integer a: Q(n, x) = e^-x sum_{k < n} x^k / k!, the Poisson CDF.
  for (int n : {2, 5, 30, 200}) {
    for (double x : {0.3, n * 0.5, n - 1.0, n + 1.5, n * 2.0}) {
      long double term = std::exp(static_cast<long double>(-x)), sum = 0;
      for (int k = 0; k < n; ++k) {
        sum += term;
        term *= x / (k + 1);
      }
      EXPECT_NEAR(regularized_gamma_q(n, x), static_cast<double>(sum),
                  1e-13 + 1e-10 * static_cast<double>(sum))
          << "n " << n << " x " << x;
    }
  }
}

TEST(ChiSquareSurvival, MatchesPublishedQuantiles) {
  struct Known {
    double statistic, dof, p;
  };
  // Upper quantiles of the chi-square distribution (e.g. NIST/SEMATECH's table, scipy.stats.chi2).
  for (const Known& k : {Known{3.841458820694124, 1, 0.05}, Known{10.827566170662733, 1, 1e-3},
                         Known{5.991464547107979, 2, 0.05}, Known{9.487729036781154, 4, 0.05},
                         Known{18.307038053275146, 10, 0.05}, Known{23.209251158954356, 10, 0.01},
                         Known{29.588298445074418, 10, 1e-3}, Known{124.34211340400407, 100, 0.05},
                         Known{67.32756330547966, 100, 0.995}}) {
    EXPECT_NEAR(chi_square_survival(k.statistic, k.dof), k.p, 1e-9 * k.p + 1e-14)
        << k.statistic << " dof " << k.dof;
  }
  // Far tails keep their relative accuracy (2 dof: Q = e^-x/2).
  EXPECT_NEAR(chi_square_survival(400.0, 2) / std::exp(-200.0), 1.0, 1e-10);
}

TEST(ChiSquareFit, PoolsSparseBinsAndRejectsImpossibleDraws) {
  const std::vector<double> prob = {0.5, 0.3, 0.18, 0.01, 0.01, 0.0};
  // 100 samples: expected 50, 30, 18 and 1, 1 pooled (2 < 5: into the 18 bin) -> 3 bins.
  GoodnessOfFit fit = chi_square_fit({{0, 50}, {1, 30}, {2, 18}, {3, 1}, {4, 1}}, prob);
  EXPECT_EQ(fit.bins, 3);
  EXPECT_EQ(fit.samples, 100);
  EXPECT_DOUBLE_EQ(fit.statistic, 0.0);
  EXPECT_DOUBLE_EQ(fit.p_value, 1.0);
  // 300 samples: the two 1% tokens (3 expected each) pool into a bin of its own (6 expected).
  fit = chi_square_fit({{0, 120}, {1, 90}, {2, 54}, {3, 20}, {4, 16}}, prob);
  EXPECT_EQ(fit.bins, 4);
  EXPECT_NEAR(fit.statistic, 30.0 * 30 / 150 + 0 + 0 + 30.0 * 30 / 6, 1e-9);
  EXPECT_LT(fit.p_value, 1e-10);
  // One token with 99.9% of the mass: the rest (2 expected of 2000) is tested by its exact
  // Poisson tail. P(X >= 3 | mean 2) = 1 - 5 e^-2; 12 such draws are far too many.
  const std::vector<double> peaked = {0.999, 0.0005, 0.0005};
  fit = chi_square_fit({{0, 1997}, {1, 2}, {2, 1}}, peaked);
  EXPECT_EQ(fit.bins, 2);
  EXPECT_NEAR(fit.rare_expected, 2.0, 1e-9);
  EXPECT_NEAR(fit.p_value, 1.0 - 5.0 * std::exp(-2.0), 1e-12);
  EXPECT_DOUBLE_EQ(chi_square_fit({{0, 2000}}, peaked).p_value, 1.0);
  EXPECT_LT(chi_square_fit({{0, 1988}, {1, 12}}, peaked).p_value, 1e-5);
  // A token of probability 0 drawn once is impossible under the distribution.
  EXPECT_EQ(chi_square_fit({{0, 50}, {5, 1}}, prob).p_value, 0.0);
  EXPECT_EQ(chi_square_fit({{0, 50}, {9, 1}}, prob).p_value, 0.0);
}

// 2000 seeded experiments of 500 draws from a known distribution: the p-values are uniform, so
// each threshold is crossed by its fraction of experiments (within 4 binomial standard
// deviations), and draws from a 10% tilted distribution are rejected.
TEST(ChiSquareFit, PValuesAreUniformUnderTheNullAndSmallOtherwise) {
  const std::vector<double> prob = {0.4, 0.2, 0.15, 0.1, 0.08, 0.04, 0.02, 0.007, 0.003};
  std::vector<double> tilted = prob;
  tilted[0] -= 0.04;
  tilted[1] += 0.04;
  std::mt19937_64 rng(7);
  const auto draw = [&](const std::vector<double>& p, int n) {
    std::discrete_distribution<int32_t> d(p.begin(), p.end());
    std::map<int32_t, int64_t> counts;
    for (int i = 0; i < n; ++i) ++counts[d(rng)];
    return counts;
  };
  constexpr int kExperiments = 2000;
  int below_01 = 0, below_05 = 0, below_50 = 0;
  for (int e = 0; e < kExperiments; ++e) {
    const double p = chi_square_fit(draw(prob, 500), prob).p_value;
    below_01 += p < 0.01;
    below_05 += p < 0.05;
    below_50 += p < 0.5;
  }
  const auto expect_fraction = [&](int hits, double alpha) {
    const double sd = std::sqrt(alpha * (1 - alpha) / kExperiments);
    EXPECT_NEAR(hits / double(kExperiments), alpha, 4 * sd) << "alpha " << alpha;
  };
  expect_fraction(below_01, 0.01);
  expect_fraction(below_05, 0.05);
  expect_fraction(below_50, 0.5);
  EXPECT_LT(chi_square_fit(draw(tilted, 20000), prob).p_value, 1e-6);
}

}  // namespace
}  // namespace sgl::test
