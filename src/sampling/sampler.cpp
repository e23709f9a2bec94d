// CPU sampling: filters follow SGLang's top_k_top_p_min_p sampling on the sorted distribution.
#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"

namespace sgl::sampling {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

int32_t argmax(const float* row, int64_t vocab) {
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i) {
    if (row[i] > row[best]) best = i;  // first maximum wins, as torch.argmax
  }
  return static_cast<int32_t>(best);
}

double log_sum_exp(const float* row, int64_t vocab) {
  const float max_v = *std::max_element(row, row + vocab);
  double sum = 0.0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(row[i] - max_v));
  return max_v + std::log(sum);
}

int32_t sample_row(const float* row, int64_t vocab, const SamplingParams& p, uint64_t step) {
  if (p.is_greedy()) return argmax(row, vocab);
  // probs = softmax(logits / T)
  std::vector<double> probs(vocab);
  const float max_v = *std::max_element(row, row + vocab);
  double total = 0.0;
  for (int64_t i = 0; i < vocab; ++i) {
    probs[i] = std::exp((static_cast<double>(row[i]) - max_v) / p.temperature);
    total += probs[i];
  }
  for (double& v : probs) v /= total;

  // Candidates sorted by probability, descending (ties: lower id first).
  std::vector<int32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return probs[a] > probs[b]; });
  int64_t keep = vocab;
  if (p.top_k > 0) keep = std::min<int64_t>(keep, p.top_k);
  // top-p: drop a token once the mass before it already exceeds top_p.
  double before = 0.0;
  for (int64_t i = 0; i < keep; ++i) {
    if (before > p.top_p) {
      keep = i;
      break;
    }
    before += probs[order[i]];
  }
  // min-p: drop tokens below min_p times the most likely one.
  const double threshold = p.min_p * probs[order[0]];
  while (keep > 1 && probs[order[keep - 1]] < threshold) --keep;

  double kept_mass = 0.0;
  for (int64_t i = 0; i < keep; ++i) kept_mass += probs[order[i]];
  const double target = uniform_from_counter(*p.seed, step) * kept_mass;
  double acc = 0.0;
  for (int64_t i = 0; i < keep; ++i) {
    acc += probs[order[i]];
    if (target < acc) return order[i];
  }
  return order[keep - 1];
}

}  // namespace

double uniform_from_counter(uint64_t seed, uint64_t step) {
  const uint64_t bits = splitmix64(splitmix64(seed) ^ (step * 0xd1b54a32d192ed03ull));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

std::vector<TokenLogprob> top_logprobs_of(const float* logits, int64_t vocab, int32_t k) {
  const double lse = log_sum_exp(logits, vocab);
  k = static_cast<int32_t>(std::min<int64_t>(k, vocab));
  std::vector<int32_t> ids(vocab);
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  std::vector<TokenLogprob> out(k);
  for (int32_t i = 0; i < k; ++i) {
    out[i] = {ids[i], static_cast<float>(logits[ids[i]] - lse)};
  }
  return out;
}

SampleOutput Sampler::sample(const Tensor& logits, const SamplingBatch& batch) const {
  SGL_CHECK(logits.device().is_cpu() && logits.ndim() == 2 && logits.is_contiguous())
      << "sampler: logits " << logits.shape_string();
  const int64_t bs = logits.size(0), vocab = logits.size(1);
  SGL_CHECK_EQ(static_cast<size_t>(bs), batch.size());
  const float* data = logits.data<float>();
  SampleOutput out;
  out.next_token_ids.resize(bs);
  if (batch.return_logprob) {
    out.next_token_logprobs.resize(bs);
    out.top_logprobs.resize(bs);
  }
  for (int64_t b = 0; b < bs; ++b) {
    const float* row = data + b * vocab;
    const SamplingParams& p = batch.params[b];
    SGL_CHECK(p.is_greedy() || p.seed.has_value()) << "sampler: request " << b << " has no seed";
    out.next_token_ids[b] = sample_row(row, vocab, p, batch.steps[b]);
    if (batch.return_logprob) {
      out.next_token_logprobs[b] =
          static_cast<float>(row[out.next_token_ids[b]] - log_sum_exp(row, vocab));
      if (batch.top_logprobs_num[b] > 0) {
        out.top_logprobs[b] = top_logprobs_of(row, vocab, batch.top_logprobs_num[b]);
      }
    }
  }
  return out;
}

}  // namespace sgl::sampling
