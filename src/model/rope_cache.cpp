// RoPE inverse frequencies (default and llama3 scaling, as transformers computes them).
#include "model/rope_cache.h"

#include <cmath>
#include <numbers>

#include "core/check.h"
#include "core/half.h"

namespace sgl::model {

std::vector<double> rope_inv_freq(const ModelConfig& config) {
  const int64_t dim = config.head_dim;
  std::vector<double> inv_freq(dim / 2);
  for (int64_t i = 0; i < dim / 2; ++i) {
    inv_freq[i] = 1.0 / std::pow(config.rope_theta, static_cast<double>(2 * i) / dim);
  }
  const RopeScaling& s = config.rope_scaling;
  if (s.type == RopeScalingType::kLlama3) {
    const double old_len = static_cast<double>(s.original_max_position_embeddings);
    const double low_wavelen = old_len / s.low_freq_factor;
    const double high_wavelen = old_len / s.high_freq_factor;
    for (double& f : inv_freq) {
      const double wavelen = 2 * std::numbers::pi / f;
      if (wavelen > low_wavelen) {
        f = f / s.factor;
      } else if (wavelen >= high_wavelen) {  // medium band: interpolate
        const double smooth =
            (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1 - smooth) * f / s.factor + smooth * f;
      }
    }
  }
  // NOTE: transformers keeps inv_freq as a buffer in the checkpoint's dtype, so for bf16
  // checkpoints the reference implementation rotates with bf16-rounded frequencies. Matching it
  // keeps our outputs within 1e-5 of transformers instead of drifting ~1e-3 per 10 positions.
  if (config.torch_dtype == "bfloat16") {
    for (double& f : inv_freq) f = bf16_to_float(float_to_bf16(static_cast<float>(f)));
  }
  return inv_freq;
}

std::vector<float> compute_rope_cos_sin(const ModelConfig& config, int64_t max_positions) {
  // An odd head_dim would leave the table a column short of [max_positions, head_dim].
  SGL_CHECK(config.head_dim % 2 == 0) << "RoPE needs an even head_dim, got " << config.head_dim;
  const std::vector<double> inv_freq = rope_inv_freq(config);
  const int64_t half = static_cast<int64_t>(inv_freq.size()), dim = 2 * half;
  std::vector<float> table(static_cast<size_t>(max_positions * dim));
  for (int64_t p = 0; p < max_positions; ++p) {
    for (int64_t i = 0; i < half; ++i) {
      // NOTE: transformers computes the angle in f32; rounding it first keeps us bit-close.
      const float inv = static_cast<float>(inv_freq[i]);
      const float angle = static_cast<float>(p) * inv;
      table[p * dim + i] = std::cos(angle);
      table[p * dim + half + i] = std::sin(angle);
    }
  }
  return table;
}

}  // namespace sgl::model
