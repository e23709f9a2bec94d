// CPU linear layer through OpenBLAS sgemm (f32): y = x @ w^T + bias.
#include <cblas.h>

#include "kernels/cpu/cpu_ops.h"

namespace sgl::kernels::cpu {

void linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y) {
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  if (m == 0) return;
  float* out = y.data<float>();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, x.data<float>(), static_cast<int>(x.stride(0)),
              w.data<float>(), static_cast<int>(k), 0.0f, out, static_cast<int>(n));
  if (bias.defined()) {
    const float* b = bias.data<float>();
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) out[r * n + c] += b[c];
    }
  }
}

}  // namespace sgl::kernels::cpu
