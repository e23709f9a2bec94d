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
  return Status::ok_status();
}

}  // namespace sgl::sampling
