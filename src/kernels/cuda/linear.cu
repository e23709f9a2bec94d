// CUDA linear layer through cuBLAS (bf16 or f32 in, f32 accumulate; f32 or bf16 out).
#include <cublas_v2.h>

#include "backend/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace sgl::kernels::cuda {
namespace {

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return CUDA_R_32F;
    case DType::kBF16:
      return CUDA_R_16BF;
    case DType::kF16:
      return CUDA_R_16F;
    default:
      SGL_CHECK(false) << "linear: unsupported dtype " << dtype_name(dtype);
      return CUDA_R_32F;
  }
}

}  // namespace

void linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
            backend::Stream stream) {
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  if (m == 0) return;
  SGL_CHECK(stream.blas != nullptr) << "linear on CUDA needs a stream with a cuBLAS handle";
  SGL_CHECK(x.dtype() == w.dtype()) << "linear: x and w dtypes differ";
  auto handle = static_cast<cublasHandle_t>(stream.blas);
  const float alpha = 1.f, beta = 0.f;
  // Row-major y[m, n] = x[m, k] w[n, k]^T is column-major y^T[n, m] = w^T^T x^T.
  const cublasStatus_t status = cublasGemmEx(
      handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
      static_cast<int>(k), &alpha, w.raw(), cuda_type(w.dtype()), static_cast<int>(k), x.raw(),
      cuda_type(x.dtype()), static_cast<int>(x.stride(0)), &beta, y.raw(), cuda_type(y.dtype()),
      static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  SGL_CHECK(status == CUBLAS_STATUS_SUCCESS) << "cublasGemmEx failed: " << static_cast<int>(status);
  if (bias.defined()) add_bias(y, bias, stream);
}

}  // namespace sgl::kernels::cuda
