// SamplingParams: how one request picks its next token (SGLang's names and defaults).
#pragma once

#include <cstdint>
#include <optional>

#include "core/status.h"

namespace sgl::sampling {

struct SamplingParams {
  float temperature = 1.0f;      // 0 = greedy
  int32_t top_k = -1;            // -1 (or 0) = disabled
  float top_p = 1.0f;            // in (0, 1]
  float min_p = 0.0f;            // in [0, 1]
  std::optional<uint64_t> seed;  // same seed + same prompt -> same output

  bool is_greedy() const { return temperature <= 1e-6f || top_k == 1; }
  // Range checks, with the field name in the message.
  Status validate() const;
};

}  // namespace sgl::sampling
