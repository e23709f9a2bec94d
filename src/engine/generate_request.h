// The engine's request and result types in token ids (the scheduler defines the request).
#pragma once

#include <vector>

#include "sampling/sampler.h"
#include "scheduler/req.h"

namespace sgl::engine {

using scheduler::finish_reason_name;
using scheduler::FinishReason;
using scheduler::FinishState;
using scheduler::GenerateRequest;

struct GenerateResult {
  std::vector<int32_t> output_ids;
  std::vector<float> output_logprobs;                             // per step, chosen token
  std::vector<std::vector<sampling::TokenLogprob>> top_logprobs;  // per step, when asked
  std::vector<std::vector<float>> token_ids_logprobs;  // per step, with token_ids_logprob
  FinishReason finish_reason = FinishReason::kLength;
};

}  // namespace sgl::engine
