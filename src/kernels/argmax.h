// Greedy ids on the logits' device: each row's first maximum (the sampler's greedy rule, as
// torch.argmax), with no host round trip, so a chain of EAGLE draft steps can feed each step's
// ids to the next on the device (and inside a CUDA graph).
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// out[r] = the first index i of row r's maximum of `logits` (f32 [rows, V], last dim contiguous),
// or id_map[i] where an id map (i32, V values, contiguous: EAGLE-3's draft-to-target ids) is
// given; NaN never wins, and a row with no value above NaN gives index 0. out: i32 [rows]
// contiguous, on the logits' device. Graph-capturable on CUDA (no scratch, no synchronisation).
void argmax_rows(const Tensor& logits, const Tensor& out, backend::Stream stream,
                 const Tensor& id_map = Tensor());

}  // namespace sgl::kernels
