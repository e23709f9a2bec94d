// CPU linear layer (f32): y = x @ w^T + bias. Few rows (decode) use a streaming dot-product
// kernel that reads each weight row once; more rows go to OpenBLAS sgemm.
#include <cblas.h>

#include "kernels/cpu/cpu_ops.h"

namespace sgl::kernels::cpu {
namespace {

// Below this many rows sgemm's packing of w (a full extra pass over the weights) costs more
// than it saves; measured in docs/perf-log/cpu-foundation.md.
constexpr int64_t kMaxStreamingRows = 4;

void linear_streaming(const float* x, int64_t ldx, const float* w, const float* bias, float* y,
                      int64_t m, int64_t n, int64_t k) {
#pragma omp parallel for schedule(static) if (n * k >= (1 << 18))
  for (int64_t j = 0; j < n; ++j) {
    const float* wr = w + j * k;
    for (int64_t i = 0; i < m; ++i) {
      const float* xr = x + i * ldx;
      float acc = 0.f;
#pragma omp simd reduction(+ : acc)
      for (int64_t c = 0; c < k; ++c) acc += xr[c] * wr[c];
      y[i * n + j] = bias != nullptr ? acc + bias[j] : acc;
    }
  }
}

}  // namespace

void linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y) {
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  if (m == 0) return;
  const float* b = bias.defined() ? bias.data<float>() : nullptr;
  float* out = y.data<float>();
  if (m <= kMaxStreamingRows) {
    linear_streaming(x.data<float>(), x.stride(0), w.data<float>(), b, out, m, n, k);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, x.data<float>(), static_cast<int>(x.stride(0)),
              w.data<float>(), static_cast<int>(k), 0.0f, out, static_cast<int>(n));
  if (b != nullptr) {
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) out[r * n + c] += b[c];
    }
  }
}

}  // namespace sgl::kernels::cpu
