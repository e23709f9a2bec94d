// GenerateRequest / GenerateResult: one generation job in token ids, and what it produced.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sampling/sampler.h"
#include "sampling/sampling_params.h"

namespace sgl::engine {

struct GenerateRequest {
  std::vector<int32_t> input_ids;
  sampling::SamplingParams sampling;
  int32_t max_new_tokens = 128;
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;  // stop on these as well as the model's EOS ids
  int32_t top_logprobs_num = 0;         // > 0 also returns per-step top-k logprobs
};

enum class FinishReason { kLength, kStop };

const char* finish_reason_name(FinishReason reason);  // "length", "stop"

struct GenerateResult {
  std::vector<int32_t> output_ids;
  std::vector<float> output_logprobs;                              // per step, chosen token
  std::vector<std::vector<sampling::TokenLogprob>> top_logprobs;  // per step, when asked
  FinishReason finish_reason = FinishReason::kLength;
};

}  // namespace sgl::engine
