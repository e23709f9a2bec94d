// CUDA linear layers (and the MLP's gate/up + SiLU): which GEMM takes a call, cuBLASLt with a
// per-shape plan cache (cublaslt_gemm.h) by default; bf16 or f32 in, f32 accumulate, f32 or bf16
// out.
#include <cublas_v2.h>

#include "kernels/cuda/cuda_data_type.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/stream_gemms.h"

namespace sgl::kernels::cuda {
namespace {

// Fallback, used only for shapes cuBLASLt's heuristic has no algorithm for (none expected with
// our dtypes; kept so an odd stride or alignment still runs): cublasGemmEx + add_bias.
void linear_gemm_ex(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                    backend::Stream stream) {
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  SGL_CHECK(stream.blas != nullptr) << "linear on CUDA needs a stream with a cuBLAS handle";
  auto handle = static_cast<cublasHandle_t>(stream.blas);
  const float alpha = 1.f, beta = 0.f;
  // Row-major y[m, n] = x[m, k] w[n, k]^T is column-major y^T[n, m] = w^T^T x^T.
  const cublasStatus_t status = cublasGemmEx(
      handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
      static_cast<int>(k), &alpha, w.raw(), cuda_data_type(w.dtype()), static_cast<int>(k), x.raw(),
      cuda_data_type(x.dtype()), static_cast<int>(x.stride(0)), &beta, y.raw(),
      cuda_data_type(y.dtype()), static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  SGL_CHECK(status == CUBLAS_STATUS_SUCCESS) << "cublasGemmEx failed: " << static_cast<int>(status);
  if (bias.defined()) add_bias(y, bias, stream);
}

// Decode-sized token counts: our weight-streaming kernel (gemv.h) up to 16 tokens, whatever the
// weight's size (it streams the 1 GB LM head of Llama-3-8B faster than cuBLASLt:
// docs/perf-log/cuda-session-10.md); our Hopper GEMM (hopper_gemm.h) up to 256 when the stream
// asks for it (set_linear_backend: it ties cuBLASLt at 64 tokens and trails it at 256,
// docs/perf-log/cuda-session-05.md).
//
// The stream's Hopper GEMM when it should take x (17..256 tokens, --linear-backend hopper).
HopperGemm* hopper_for(const Tensor& x, backend::Stream stream) {
  if (x.size(0) > kHopperGemmMaxTokens) return nullptr;
  StreamGemms& gemms = StreamGemms::of(stream);
  return gemms.hopper_for_linear ? &gemms.hopper : nullptr;
}

}  // namespace

void linear_library(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                    backend::Stream stream) {
  if (x.size(0) == 0) return;
  SGL_CHECK(x.dtype() == w.dtype()) << "linear: x and w dtypes differ";
  if (StreamGemms::of(stream).library.run(x, w, bias, y, stream)) return;
  linear_gemm_ex(x, w, bias, y, stream);
}

void linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
            backend::Stream stream) {
  if (gemv_applies(x, w) && (!bias.defined() || bias.dtype() == DType::kBF16) &&
      (y.dtype() == DType::kBF16 || y.dtype() == DType::kF32)) {
    gemv(x, w, bias, y, stream);
    return;
  }
  if (HopperGemm* hopper = hopper_for(x, stream); hopper && hopper->applies(x, w, bias, y)) {
    hopper->run(x, w, bias, y, stream);
    return;
  }
  linear_library(x, w, bias, y, stream);
}

void linear_silu_and_mul(const Tensor& x, const Tensor& w_gate_up, const Tensor& gate_up,
                         const Tensor& out, backend::Stream stream) {
  if (gemv_applies(x, w_gate_up) && out.dtype() == DType::kBF16) {
    gemv_silu_and_mul(x, w_gate_up, out, stream);
    return;
  }
  if (HopperGemm* hopper = hopper_for(x, stream);
      hopper && hopper->applies_silu_and_mul(x, w_gate_up, out)) {
    hopper->run_silu_and_mul(x, w_gate_up, out, stream);
    return;
  }
  linear(x, w_gate_up, Tensor(), gate_up, stream);
  silu_and_mul(gate_up, out, stream);
}

}  // namespace sgl::kernels::cuda
