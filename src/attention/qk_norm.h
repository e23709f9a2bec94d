// QkNorm: the per-head RMSNorm some models apply to q and k before RoPE (Qwen3's q_norm and
// k_norm), handed to an attention backend that can fold it into its RoPE pass.
#pragma once

#include "core/tensor.h"

namespace sgl::attention {

struct QkNorm {
  Tensor q_weight;  // [head_dim]
  Tensor k_weight;  // [head_dim]
  float eps = 0.f;
};

}  // namespace sgl::attention
