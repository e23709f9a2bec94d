// Sampler: logits -> next token per request (greedy, temperature, top-k, top-p, min-p), plus
// log-probabilities of the raw distribution.
#pragma once

#include <cstdint>
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

  size_t size() const { return params.size(); }
};

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0.f;
};

struct SampleOutput {
  std::vector<int32_t> next_token_ids;                  // [bs]
  std::vector<float> next_token_logprobs;               // [bs] when return_logprob
  std::vector<std::vector<TokenLogprob>> top_logprobs;  // [bs][k] when return_logprob
};

// A uniform in [0, 1) from (seed, step): counter-based, so a request's draws do not depend on
// which other requests share its batch.
double uniform_from_counter(uint64_t seed, uint64_t step);

// log_softmax of one logits row, as top-`k` (id, logprob) pairs sorted by logprob descending,
// ties by lower id.
std::vector<TokenLogprob> top_logprobs_of(const float* logits, int64_t vocab, int32_t k);

class Sampler {
 public:
  // logits: f32 [bs, V] on the host.
  SampleOutput sample(const Tensor& logits, const SamplingBatch& batch) const;
};

}  // namespace sgl::sampling
