// CUDA add_sigmoid_gated (Qwen2-MoE's shared expert gate): one block per token sums x . w_gate
// in f32, then adds sigmoid(that) * y to the token's output row.
#include <cuda_bf16.h>

#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "kernels/cuda/common/cuda_types.cuh"
#include "kernels/cuda/common/dispatch.cuh"
#include "kernels/cuda/common/pdl.cuh"
#include "kernels/cuda/cuda_moe.h"

namespace sgl::kernels::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    add_sigmoid_gated_kernel(const T* __restrict__ x, int64_t x_stride, const T* __restrict__ w,
                             const T* __restrict__ y, T* __restrict__ out, int64_t hidden) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t t = blockIdx.x;
  const T* xt = x + t * x_stride;
  float dot = 0.f;
  for (int64_t c = threadIdx.x; c < hidden; c += kThreads) dot += to_float(xt[c]) * to_float(w[c]);
  const float gate = 1.0f / (1.0f + expf(-block_sum(dot)));
  T* o = out + t * hidden;
  const T* yt = y + t * hidden;
  for (int64_t c = threadIdx.x; c < hidden; c += kThreads) {
    o[c] = from_float<T>(to_float(o[c]) + gate * to_float(yt[c]));
  }
}

}  // namespace

void add_sigmoid_gated(const Tensor& x, const Tensor& w_gate, const Tensor& y, const Tensor& out,
                       backend::Stream stream) {
  const auto s = backend::cuda::native_stream(stream);
  SGL_DISPATCH_FLOAT(x.dtype(), T, {
    launch_pdl(add_sigmoid_gated_kernel<T>, dim3(static_cast<unsigned>(x.size(0))), kThreads, 0, s,
               static_cast<const T*>(x.raw()), x.stride(0), static_cast<const T*>(w_gate.raw()),
               static_cast<const T*>(y.raw()), static_cast<T*>(out.raw()), x.size(1));
  });
}

}  // namespace sgl::kernels::cuda
