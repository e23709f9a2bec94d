// Pearson's chi-square goodness-of-fit test, for statistical tests of sampled output: the
// chi-square survival function (through the regularized upper incomplete gamma function) and a
// fit of observed token counts to exact probabilities, sparse bins pooled.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace sgl::test {

// Q(a, x) = Gamma(a, x) / Gamma(a) for a > 0, x >= 0. Below x = a + 1 from the series of
// P(a, x) = 1 - Q (its terms fall fast there and Q is not small), above from Legendre's continued
// fraction for Q (modified Lentz), which keeps relative accuracy in far tails (p of 1e-100).
inline double regularized_gamma_q(double a, double x) {
  if (x <= 0.0) return 1.0;
  const double prefactor = std::exp(a * std::log(x) - x - std::lgamma(a));  // x^a e^-x / G(a)
  if (x < a + 1.0) {
    // P(a, x) = prefactor * sum_n x^n / (a (a + 1) ... (a + n))
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 100000 && term > sum * 1e-17; ++n) {
      term *= x / (a + n);
      sum += term;
    }
    return 1.0 - prefactor * sum;
  }
  // Q(a, x) = prefactor / (b0 + a1 / (b1 + a2 / (b2 + ...))), b_n = x + 1 - a + 2n,
  // a_n = -n (n - a).
  constexpr double kTiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / kTiny, d = 1.0 / b, f = d;
  for (int n = 1; n < 100000; ++n) {
    const double an = -n * (n - a);
    b += 2.0;
    d = an * d + b;
    if (std::abs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = c * d;
    f *= delta;
    if (std::abs(delta - 1.0) < 1e-16) break;
  }
  return prefactor * f;
}

// P(X >= statistic) for X chi-square distributed with `dof` degrees of freedom.
inline double chi_square_survival(double statistic, double dof) {
  return regularized_gamma_q(dof / 2.0, statistic / 2.0);
}

// P(X >= k) for X Poisson distributed with mean `mean`: P(k, mean) = 1 - Q(k, mean).
inline double poisson_upper_tail(int64_t k, double mean) {
  if (k <= 0) return 1.0;
  if (mean <= 0.0) return 0.0;
  return 1.0 - regularized_gamma_q(static_cast<double>(k), mean);
}

struct GoodnessOfFit {
  double statistic = 0.0;  // Pearson's X^2 = sum over bins (observed - expected)^2 / expected
  int32_t bins = 0;        // after pooling
  double p_value = 1.0;    // chi_square_survival(statistic, bins - 1); 1 with fewer than 2 bins
  int64_t samples = 0;
  // Set when one token holds all but fewer than 5 expected draws: the rare tokens' count and
  // its expectation, tested by their exact tail instead of X^2.
  double rare_expected = -1.0;
  int64_t rare_observed = 0;
  std::string to_string() const {
    std::ostringstream s;
    if (rare_expected >= 0.0) {
      s << rare_observed << " draws of tokens expected " << rare_expected << " times (" << samples
        << " samples), Poisson tail p " << p_value;
    } else {
      s << "X^2 " << statistic << " over " << bins << " bins (" << samples << " samples), p "
        << p_value;
    }
    return s.str();
  }
};

// `counts` token id -> observed count against `prob` [V], the exact probability of each token
// (summing to 1). Tokens expected at least 5 times are bins of their own; the rest share one
// pooled bin, itself merged into the smallest other bin while it is expected fewer than 5 times
// (the chi-square approximation wants every expected count >= 5). A token of probability 0
// observed at all, or an id outside the vocabulary, is an impossible draw: p 0.
inline GoodnessOfFit chi_square_fit(const std::map<int32_t, int64_t>& counts,
                                    std::span<const double> prob) {
  constexpr double kMinExpected = 5.0;
  GoodnessOfFit fit;
  for (const auto& [id, n] : counts) fit.samples += n;
  for (const auto& [id, n] : counts) {
    if (n > 0 && (id < 0 || static_cast<size_t>(id) >= prob.size() || prob[id] <= 0.0)) {
      fit.statistic = std::numeric_limits<double>::infinity();
      fit.p_value = 0.0;
      return fit;
    }
  }
  const auto total = static_cast<double>(fit.samples);
  struct Bin {
    double expected = 0.0;
    double observed = 0.0;
  };
  std::vector<Bin> bins;
  Bin pooled;
  for (size_t id = 0; id < prob.size(); ++id) {
    const auto it = counts.find(static_cast<int32_t>(id));
    const Bin bin{total * prob[id], it == counts.end() ? 0.0 : static_cast<double>(it->second)};
    if (bin.expected >= kMinExpected) {
      bins.push_back(bin);
    } else {
      pooled.expected += bin.expected;
      pooled.observed += bin.observed;
    }
  }
  std::sort(bins.begin(), bins.end(),
            [](const Bin& a, const Bin& b) { return a.expected < b.expected; });
  if (bins.size() == 1 && pooled.expected < kMinExpected) {
    // One token holds nearly all the mass: the rest, too rare for a chi-square bin, is tested
    // by the exact tail of its count (Poisson, as the binomial of rare events): too many draws
    // of tokens the distribution all but rules out is what a wrong distribution looks like here.
    fit.bins = 2;
    fit.rare_expected = pooled.expected;
    fit.rare_observed = static_cast<int64_t>(pooled.observed);
    fit.p_value = poisson_upper_tail(fit.rare_observed, pooled.expected);
    return fit;
  }
  if (pooled.expected >= kMinExpected || bins.empty()) {
    if (pooled.expected > 0.0) bins.push_back(pooled);
  } else {
    bins.front().expected += pooled.expected;
    bins.front().observed += pooled.observed;
  }
  fit.bins = static_cast<int32_t>(bins.size());
  if (fit.bins < 2) return fit;
  for (const Bin& b : bins) {
    fit.statistic += (b.observed - b.expected) * (b.observed - b.expected) / b.expected;
  }
  fit.p_value = chi_square_survival(fit.statistic, fit.bins - 1);
  return fit;
}

}  // namespace sgl::test
