// CPU rotary embedding (rotate-half), in place.
#include "kernels/cpu/cpu_ops.h"

namespace sgl::kernels::cpu {
namespace {

void rotate_heads(const Tensor& x, int64_t t, const float* cos, const float* sin) {
  const int64_t heads = x.size(1), half = x.size(2) / 2;
  float* base = x.data<float>() + t * x.stride(0);
  for (int64_t h = 0; h < heads; ++h) {
    float* v = base + h * x.stride(1);
    for (int64_t i = 0; i < half; ++i) {
      const float a = v[i], b = v[i + half];
      v[i] = a * cos[i] - b * sin[i];
      v[i + half] = b * cos[i] + a * sin[i];
    }
  }
}

}  // namespace

void rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& cos_sin) {
  const int32_t* pos = positions.data<int32_t>();
  const int64_t max_pos = cos_sin.size(0), dim = cos_sin.size(1);
  const float* table = cos_sin.data<float>();
  for (int64_t t = 0; t < q.size(0); ++t) {
    SGL_CHECK(pos[t] >= 0 && pos[t] < max_pos)
        << "rope: position " << pos[t] << " beyond " << max_pos;
    const float* cos = table + pos[t] * dim;
    const float* sin = cos + dim / 2;
    rotate_heads(q, t, cos, sin);
    rotate_heads(k, t, cos, sin);
  }
}

}  // namespace sgl::kernels::cpu
