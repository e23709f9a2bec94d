// SamplingParams validation.
#include "sampling/sampling_params.h"

#include <cmath>
#include <string>

namespace sgl::sampling {

Status SamplingParams::validate() const {
  if (!std::isfinite(temperature) || temperature < 0.f) {
    return invalid_argument("temperature must be a finite number >= 0, got " +
                            std::to_string(temperature));
  }
  if (top_k < -1)
    return invalid_argument("top_k must be -1 (disabled) or >= 1, got " + std::to_string(top_k));
  if (!(top_p > 0.f && top_p <= 1.f)) {
    return invalid_argument("top_p must be in (0, 1], got " + std::to_string(top_p));
  }
  if (!(min_p >= 0.f && min_p <= 1.f)) {
    return invalid_argument("min_p must be in [0, 1], got " + std::to_string(min_p));
  }
  if (!(presence_penalty >= -2.f && presence_penalty <= 2.f)) {
    return invalid_argument("presence_penalty must be in [-2, 2], got " +
                            std::to_string(presence_penalty));
  }
  if (!(frequency_penalty >= -2.f && frequency_penalty <= 2.f)) {
    return invalid_argument("frequency_penalty must be in [-2, 2], got " +
                            std::to_string(frequency_penalty));
  }
  if (!(repetition_penalty > 0.f && repetition_penalty <= 2.f)) {
    return invalid_argument("repetition_penalty must be in (0, 2], got " +
                            std::to_string(repetition_penalty));
  }
  if (min_new_tokens < 0) {
    return invalid_argument("min_new_tokens must be >= 0, got " + std::to_string(min_new_tokens));
  }
  for (const LogitBias& b : logit_bias) {
    if (b.id < 0) return invalid_argument("logit_bias: invalid token id " + std::to_string(b.id));
    if (!(b.bias >= -100.f && b.bias <= 100.f)) {
      return invalid_argument("logit_bias: the bias of token " + std::to_string(b.id) +
                              " must be in [-100, 100], got " + std::to_string(b.bias));
    }
  }
  return Status::ok_status();
}

}  // namespace sgl::sampling
