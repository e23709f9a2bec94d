// The distribution the sampler draws one logits row from (sampler.h's rules 1-4): the kept
// tokens' exact integer weights, shared by the host Sampler and by tests of sampled output.
#pragma once

#include <cstdint>
#include <vector>

#include "sampling/sampling_params.h"

namespace sgl::sampling {

struct KeptWeights {
  std::vector<uint64_t> weight;  // [V]: w_i of the kept tokens, 0 for every other token
  uint64_t total = 0;            // the kept weight M; 0 when every weight is 0 (greedy fallback)
};

// Rules 2-4 of sampler.h for a non-greedy `p` over one row `logits` [vocab].
KeptWeights kept_weights(const float* logits, int64_t vocab, const SamplingParams& p);

// The probability of each token [vocab] under the sampler's rules: w_i / M over the kept set,
// or 1 at the first maximum where the sampler is greedy (greedy params, or all weights 0). The
// draw itself (rule 5) picks token i with probability w_i / M up to 2^-53.
std::vector<double> sampling_distribution(const float* logits, int64_t vocab,
                                          const SamplingParams& p);

}  // namespace sgl::sampling
