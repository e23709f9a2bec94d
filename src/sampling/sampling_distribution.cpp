// The kept tokens' weights (sampler.h's rules 2-4), with a sort.
#include "sampling/sampling_distribution.h"

#include <algorithm>

#include "kernels/sampling_math.h"

namespace sgl::sampling {
namespace sm = kernels::sampling_math;

KeptWeights kept_weights(const float* logits, int64_t vocab, const SamplingParams& p) {
  // 2. weights
  const float max_logit = *std::max_element(logits, logits + vocab);
  const double inv_temperature = 1.0 / static_cast<double>(p.temperature);
  KeptWeights out;
  out.weight.resize(static_cast<size_t>(vocab));
  uint64_t total = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    out.weight[i] = sm::token_weight(logits[i], max_logit, inv_temperature);
    total += out.weight[i];
  }
  if (total == 0) return out;
  std::vector<uint64_t>& weight = out.weight;
  // 3. candidates (min-p), ranked by weight descending, ties by lower id
  const uint64_t min_weight = sm::min_p_weight(p.min_p);
  std::vector<int32_t> ranked;
  for (int64_t i = 0; i < vocab; ++i) {
    if (weight[i] >= min_weight) {
      ranked.push_back(static_cast<int32_t>(i));
    } else {
      weight[i] = 0;
    }
  }
  const auto before = [&](int32_t a, int32_t b) {
    return weight[a] > weight[b] || (weight[a] == weight[b] && a < b);
  };
  size_t keep = ranked.size();
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < keep) {
    keep = static_cast<size_t>(p.top_k);
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<int64_t>(keep), ranked.end(),
                      before);
  } else {
    std::sort(ranked.begin(), ranked.end(), before);
  }
  // 4. top-k, then top-p: a token is dropped once the weight before it exceeds the limit
  const uint64_t limit = sm::top_p_limit(p.top_p, total);
  size_t kept = 0;
  while (kept < keep && out.total <= limit) out.total += weight[ranked[kept++]];
  for (size_t r = kept; r < ranked.size(); ++r) weight[ranked[r]] = 0;
  return out;
}

std::vector<double> sampling_distribution(const float* logits, int64_t vocab,
                                          const SamplingParams& p) {
  std::vector<double> prob(static_cast<size_t>(vocab), 0.0);
  const KeptWeights kept = p.is_greedy() ? KeptWeights{} : kept_weights(logits, vocab, p);
  if (kept.total == 0) {  // greedy: the first maximum, as the sampler's argmax
    prob[std::max_element(logits, logits + vocab) - logits] = 1.0;
    return prob;
  }
  for (int64_t i = 0; i < vocab; ++i) {
    prob[i] = static_cast<double>(kept.weight[i]) / static_cast<double>(kept.total);
  }
  return prob;
}

}  // namespace sgl::sampling
