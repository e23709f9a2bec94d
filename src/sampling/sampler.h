// Sampler: logits -> next token per request (greedy, temperature, top-k, top-p, min-p), plus
// log-probabilities of the raw distribution.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/tensor.h"
#include "sampling/sampling_params.h"

namespace sgl::sampling {

// Per-request sampling state for one batch, aligned with the logits rows.
struct SamplingBatch {
  std::vector<SamplingParams> params;     // [bs]; seeds must be set (the engine fills defaults)
  std::vector<uint64_t> steps;            // [bs]: tokens generated so far (the RNG counter)
  std::vector<int32_t> top_logprobs_num;  // [bs]: 0 = no top-k logprobs
  bool return_logprob = false;
  // [bs][n_b] (or empty: none): SGLang's token_ids_logprob, the ids whose logprobs row b reports
  // whatever it samples; n_b <= kMaxTokenIdsLogprob, ids in the vocabulary.
  std::vector<std::vector<int32_t>> token_ids_logprob = {};

  size_t size() const { return params.size(); }
};

// The most ids one request may ask token_ids_logprob for (the device sampler's buffers hold
// this many per row).
constexpr int32_t kMaxTokenIdsLogprob = 128;

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0.f;
};

struct SampleOutput {
  std::vector<int32_t> next_token_ids;                  // [bs]
  std::vector<float> next_token_logprobs;               // [bs] when return_logprob
  std::vector<std::vector<TokenLogprob>> top_logprobs;  // [bs][k] when return_logprob
  // [bs][n_b] when a row of SamplingBatch::token_ids_logprob asks ids (may be empty when none
  // does): row b's requested ids' logprobs, in its order, of next_token_logprobs' distribution.
  std::vector<std::vector<float>> token_ids_logprobs = {};
};

// A uniform in [0, 1) from (seed, step): counter-based, so a request's draws do not depend on
// which other requests share its batch. The draw uses its 53 bits (random_bits53).
double uniform_from_counter(uint64_t seed, uint64_t step);

// The sampling rules, implemented twice: by Sampler (host, sorts, plainly correct) and by
// kernels::sample_tokens (CUDA, no sort). Both use kernels/sampling_math.h and return the same
// token for the same row, bit for bit. For one logits row x[0, V) (finite or -inf; no NaN or
// +inf) with temperature T, top_k, top_p, min_p, seed and step:
//   1. Greedy (T <= 1e-6 or top_k == 1): the first index of max(x).
//   2. Weights: w_i = floor(2^45 * exp((x_i - max x) * (1 / T))), an exact integer
//      (sampling_math::token_weight); the top token weighs 2^45, tokens below e^-32 of it weigh
//      0 and are never drawn. W = sum of all w_i; probabilities are w_i / W.
//   3. Candidates: tokens with w_i >= ceil(min_p * 2^45) and w_i > 0 (min-p, relative to the
//      top token), ranked by weight descending, equal weights by lower id.
//   4. The kept set is the longest prefix of that ranking in which every token has rank < top_k
//      (when top_k > 0) and the weight ranked before it is <= floor(double(top_p) * double(W))
//      (top-p: a token is dropped once the mass before it exceeds top_p; top_p >= 1 keeps all).
//      Every filter sees the full distribution, with no renormalisation in between (SGLang's
//      top_k_top_p_min_p order). The top token is always kept.
//   5. Draw: M = the kept weight, r = floor(u * M) with u = random_bits53(seed, step) * 2^-53
//      (exact integer arithmetic); the token is the kept token of lowest id whose running kept
//      weight, summed in id order, exceeds r.
// Every step is exact integer arithmetic on w_i, so the two implementations agree exactly; the
// only floating-point step, exp, is one both sides evaluate with the same IEEE operations.
// Rows whose weights are all 0 (every logit -inf) fall back to greedy.

// log_softmax of one logits row, as top-`k` (id, logprob) pairs sorted by logprob descending,
// ties by lower id.
std::vector<TokenLogprob> top_logprobs_of(const float* logits, int64_t vocab, int32_t k);
// log(sum(exp(row))) over a [vocab] row, in f64 around the row's max.
double log_sum_exp(const float* row, int64_t vocab);
// log_softmax of one logits row at each of `ids` (in [0, vocab)), in their order.
std::vector<float> logprobs_of_ids(const float* logits, int64_t vocab,
                                   std::span<const int32_t> ids);

// The host implementation of the rules above.
class Sampler {
 public:
  // logits: f32 [bs, V] on the host.
  SampleOutput sample(const Tensor& logits, const SamplingBatch& batch) const;
};

}  // namespace sgl::sampling
