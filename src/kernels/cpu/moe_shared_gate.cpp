// CPU sigmoid-gated add of Qwen2-MoE's shared expert output.
#include <cmath>

#include "kernels/cpu/moe_ops.h"

namespace sgl::kernels::cpu {

void add_sigmoid_gated(const Tensor& x, const Tensor& w_gate, const Tensor& y, const Tensor& out) {
  const int64_t tokens = x.size(0), hidden = x.size(1);
  const float* w = w_gate.data<float>();
  const float* yp = y.data<float>();
  float* o = out.data<float>();
#pragma omp parallel for if (tokens >= 64)
  for (int64_t t = 0; t < tokens; ++t) {
    const float* xt = x.data<float>() + t * x.stride(0);
    float logit = 0.f;
    for (int64_t c = 0; c < hidden; ++c) logit += xt[c] * w[c];
    const float gate = 1.0f / (1.0f + std::exp(-logit));
    for (int64_t c = 0; c < hidden; ++c) o[t * hidden + c] += gate * yp[t * hidden + c];
  }
}

}  // namespace sgl::kernels::cpu
