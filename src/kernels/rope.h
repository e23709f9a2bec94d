// Rotary position embedding (rotate-half / NeoX layout), in place on q and k.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// q: [T, Hq, D], k: [T, Hk, D] (rows may be strided, last dim contiguous); positions: i32 [T];
// cos_sin: f32 [max_pos, D] with cos in [:, :D/2] and sin in [:, D/2:] (any scaling applied).
// x[i] -> x[i] * cos[i] - x[i + D/2] * sin[i];  x[i + D/2] -> x[i + D/2] * cos[i] + x[i] * sin[i].
void rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& cos_sin,
          backend::Stream stream);

// The argument checks rope() makes (aborts with a clear message), for kernels that fuse RoPE
// with other work (AttentionBackend::forward_with_rope).
void check_rope_args(const Tensor& q, const Tensor& k, const Tensor& positions,
                     const Tensor& cos_sin);

}  // namespace sgl::kernels
