// Activations: the MLP's gated SiLU, and ReLU.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// gate_up: [T, 2I] = [gate | up]; out: [T, I] = silu(gate) * up.
void silu_and_mul(const Tensor& gate_up, const Tensor& out, backend::Stream stream);

// x = max(x, 0) in place, any shape (a reward model's score head: model/layers/score_head.h).
void relu(const Tensor& x, backend::Stream stream);

}  // namespace sgl::kernels
