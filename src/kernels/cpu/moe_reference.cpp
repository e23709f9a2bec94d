// The obviously-correct MoE experts loop: per token, per selected expert, in double.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/moe_ops.h"

namespace sgl::kernels::cpu {

void fused_moe_reference(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                         const Tensor& topk_weights, const Tensor& topk_ids, const Tensor& out) {
  const int64_t tokens = x.size(0), hidden = x.size(1), k = topk_ids.size(1);
  const int64_t experts = w_gate_up.size(0), inter = w_gate_up.size(1) / 2;
  const float* w13 = w_gate_up.data<float>();
  const float* w2 = w_down.data<float>();
  std::vector<double> act(inter), sum(hidden);
  for (int64_t t = 0; t < tokens; ++t) {
    const float* xt = x.data<float>() + t * x.stride(0);
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = topk_ids.data<int32_t>()[t * k + j];
      SGL_CHECK(e >= -1 && e < experts)
          << "fused_moe_reference: expert id " << e << " not in [0, " << experts << ") nor -1";
      if (e < 0) continue;  // a masked pair adds nothing
      const float* gate = w13 + e * 2 * inter * hidden;
      const float* up = gate + inter * hidden;
      for (int64_t i = 0; i < inter; ++i) {
        double g = 0, u = 0;
        for (int64_t c = 0; c < hidden; ++c) {
          g += double(gate[i * hidden + c]) * xt[c];
          u += double(up[i * hidden + c]) * xt[c];
        }
        act[i] = g / (1 + std::exp(-g)) * u;
      }
      const float* down = w2 + e * hidden * inter;
      const double weight = topk_weights.data<float>()[t * k + j];
      for (int64_t h = 0; h < hidden; ++h) {
        double d = 0;
        for (int64_t i = 0; i < inter; ++i) d += double(down[h * inter + i]) * act[i];
        sum[h] += weight * d;
      }
    }
    for (int64_t h = 0; h < hidden; ++h) out.data<float>()[t * hidden + h] = float(sum[h]);
  }
}

}  // namespace sgl::kernels::cpu
