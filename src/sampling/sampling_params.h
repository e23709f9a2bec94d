// SamplingParams: how one request picks its next token (SGLang's names and defaults).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/status.h"

namespace sgl::sampling {

// One logit_bias entry: `bias` is added to token `id`'s logit before sampling.
struct LogitBias {
  int32_t id = 0;
  float bias = 0.f;  // in [-100, 100]
};

struct SamplingParams {
  float temperature = 1.0f;      // 0 = greedy
  int32_t top_k = -1;            // -1 (or 0) = disabled
  float top_p = 1.0f;            // in (0, 1]
  float min_p = 0.0f;            // in [0, 1]
  std::optional<uint64_t> seed;  // same seed + same prompt -> same output
  // Logit processing before sampling (sampling/logit_processor.h applies them).
  float presence_penalty = 0.0f;      // [-2, 2]: once per distinct generated token (OpenAI)
  float frequency_penalty = 0.0f;     // [-2, 2]: per occurrence in the generated tokens (OpenAI)
  float repetition_penalty = 1.0f;    // (0, 2]: prompt + generated tokens scaled (HF / SGLang)
  int32_t min_new_tokens = 0;         // EOS and stop_token_ids masked until this many generated
  std::vector<LogitBias> logit_bias;  // ids are checked against the vocabulary by the engine

  bool is_greedy() const { return temperature <= 1e-6f || top_k == 1; }
  // A penalty applies: it reads the tokens seen so far.
  bool has_penalties() const {
    return presence_penalty != 0.f || frequency_penalty != 0.f || repetition_penalty != 1.f;
  }
  // A penalty or a logit_bias applies (at every step).
  bool has_penalties_or_bias() const { return has_penalties() || !logit_bias.empty(); }
  // Range checks, with the field name in the message.
  Status validate() const;
};

}  // namespace sgl::sampling
