// Gated activations of the MLP.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// gate_up: [T, 2I] = [gate | up]; out: [T, I] = silu(gate) * up.
void silu_and_mul(const Tensor& gate_up, const Tensor& out, backend::Stream stream);

}  // namespace sgl::kernels
