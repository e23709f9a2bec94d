// The cos/sin table RoPE kernels read, with the config's scaling applied.
#pragma once

#include <vector>

#include "model/model_config.h"

namespace sgl::model {

// f32 [max_positions, head_dim]: row p = [cos(p * inv_freq) | sin(p * inv_freq)].
std::vector<float> compute_rope_cos_sin(const ModelConfig& config, int64_t max_positions);

// Per-pair inverse frequencies [head_dim / 2], after rope scaling.
std::vector<double> rope_inv_freq(const ModelConfig& config);

}  // namespace sgl::model
