// CPU activations: SiLU-and-mul, ReLU.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_ops.h"

namespace sgl::kernels::cpu {

void silu_and_mul(const Tensor& gate_up, const Tensor& out) {
  const int64_t rows = out.size(0), inter = out.size(1);
  const float* in = gate_up.data<float>();
  float* o = out.data<float>();
#pragma omp parallel for if (rows >= 64)
  for (int64_t r = 0; r < rows; ++r) {
    const float* gate = in + r * 2 * inter;
    const float* up = gate + inter;
    for (int64_t i = 0; i < inter; ++i) {
      const float g = gate[i];
      o[r * inter + i] = g / (1.0f + std::exp(-g)) * up[i];
    }
  }
}

void relu(const Tensor& x) {
  float* v = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) v[i] = std::max(v[i], 0.0f);
}

}  // namespace sgl::kernels::cpu
