// Embedding lookup: out[t, :] = table[ids[t], :].
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// ids: i32 [T]; table: [V, H]; out: [T, H] (same dtype as table). Ids outside [0, V) abort.
void embedding(const Tensor& ids, const Tensor& table, const Tensor& out, backend::Stream stream);

}  // namespace sgl::kernels
