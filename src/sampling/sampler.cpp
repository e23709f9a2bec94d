// CPU sampling: the reference implementation of the rules in sampler.h (sorts the candidates).
#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"
#include "kernels/sampling_math.h"
#include "sampling/sampling_distribution.h"

namespace sgl::sampling {
namespace sm = kernels::sampling_math;
namespace {

int32_t argmax(const float* row, int64_t vocab) {
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i) {
    if (row[i] > row[best]) best = i;  // first maximum wins, as torch.argmax
  }
  return static_cast<int32_t>(best);
}

// The rules of sampler.h, step by step: the kept weights (sampling_distribution.h), then the draw.
int32_t sample_row(const float* row, int64_t vocab, const SamplingParams& p, uint64_t step) {
  if (p.is_greedy()) return argmax(row, vocab);
  const KeptWeights kept = kept_weights(row, vocab, p);
  if (kept.total == 0) return argmax(row, vocab);
  // 5. inverse CDF in id order
  const uint64_t target = sm::scale_draw(sm::random_bits53(*p.seed, step), kept.total);
  uint64_t running = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    running += kept.weight[i];
    if (running > target) return static_cast<int32_t>(i);
  }
  SGL_CHECK(false) << "sampler: the draw ran past the kept set";
  return 0;
}

}  // namespace

double log_sum_exp(const float* row, int64_t vocab) {
  const float max_v = *std::max_element(row, row + vocab);
  double sum = 0.0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(row[i] - max_v));
  return max_v + std::log(sum);
}

std::vector<float> logprobs_of_ids(const float* logits, int64_t vocab,
                                   std::span<const int32_t> ids) {
  std::vector<float> out;
  if (ids.empty()) return out;
  const double lse = log_sum_exp(logits, vocab);
  out.reserve(ids.size());
  for (int32_t id : ids) {
    SGL_CHECK(id >= 0 && id < vocab) << "token_ids_logprob: token " << id;
    out.push_back(static_cast<float>(logits[id] - lse));
  }
  return out;
}

double uniform_from_counter(uint64_t seed, uint64_t step) {
  return static_cast<double>(sm::random_bits53(seed, step)) * 0x1.0p-53;
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
  SGL_CHECK(vocab > 0 && vocab <= sm::kMaxVocab) << "sampler: vocab " << vocab;
  const float* data = logits.data<float>();
  SampleOutput out;
  out.next_token_ids.resize(bs);
  if (batch.return_logprob) {
    out.next_token_logprobs.resize(bs);
    out.top_logprobs.resize(bs);
  }
  const bool token_ids = !batch.token_ids_logprob.empty();
  if (token_ids) {
    SGL_CHECK_EQ(batch.token_ids_logprob.size(), static_cast<size_t>(bs));
    out.token_ids_logprobs.resize(bs);
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
    if (token_ids)
      out.token_ids_logprobs[b] = logprobs_of_ids(row, vocab, batch.token_ids_logprob[b]);
  }
  return out;
}

}  // namespace sgl::sampling
