// CPU RMSNorm (f32), plain and fused with the residual add.
#include <cmath>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/row_layout.h"

namespace sgl::kernels::cpu {
namespace {

void normalize_row(const float* x, const float* w, int64_t n, double eps, float* out) {
  float sum_sq = 0.f;
  for (int64_t i = 0; i < n; ++i) sum_sq += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(sum_sq / static_cast<float>(n) + static_cast<float>(eps));
  for (int64_t i = 0; i < n; ++i) out[i] = w[i] * (x[i] * inv);
}

}  // namespace

void rms_norm(const Tensor& x, const Tensor& weight, double eps, const Tensor& out) {
  const RowLayout in_rows = row_layout(x);
  const RowLayout out_rows = row_layout(out);
  const float* xp = x.data<float>();
  const float* w = weight.data<float>();
  float* op = out.data<float>();
#pragma omp parallel for if (in_rows.num_rows >= 64)
  for (int64_t r = 0; r < in_rows.num_rows; ++r) {
    normalize_row(xp + in_rows.offset(r), w, in_rows.row_len, eps, op + out_rows.offset(r));
  }
}

void fused_add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor& weight, double eps) {
  const int64_t rows = x.size(0), n = x.size(1);
  float* xp = x.data<float>();
  float* rp = residual.data<float>();
  const float* w = weight.data<float>();
#pragma omp parallel for if (rows >= 64)
  for (int64_t r = 0; r < rows; ++r) {
    float* xr = xp + r * n;
    float* rr = rp + r * n;
    for (int64_t i = 0; i < n; ++i) rr[i] += xr[i];
    normalize_row(rr, w, n, eps, xr);
  }
}

void qk_rms_norm(const Tensor& q, const Tensor& k, const Tensor& q_weight, const Tensor& k_weight,
                 double eps) {
  rms_norm(q, q_weight, eps, q);
  rms_norm(k, k_weight, eps, k);
}

}  // namespace sgl::kernels::cpu
