// CPU LoRA update (f32): the shrink through the linear layer's kernel, the expand as one sgemm
// accumulating into y (beta = 1), which may be a column range of a wider output.
#include <cblas.h>

#include "kernels/cpu/cpu_ops.h"

namespace sgl::kernels::cpu {

void add_lora(const Tensor& x, const Tensor& a, const Tensor& b, float scaling,
              const Tensor& shrunk, const Tensor& y) {
  const int64_t m = x.size(0), r = a.size(0), n = b.size(0);
  if (m == 0) return;
  linear(x, a, Tensor(), shrunk);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(r), scaling, shrunk.data<float>(), static_cast<int>(r),
              b.data<float>(), static_cast<int>(r), 1.0f, y.data<float>(),
              static_cast<int>(y.stride(0)));
}

}  // namespace sgl::kernels::cpu
