// CUDA fills: grid-stride loops over a flat tensor.
#include <cuda_fp16.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "kernels/cuda/common/cuda_types.cuh"
#include "kernels/cuda/cuda_fill.h"
#include "kernels/fill.h"

namespace sgl::kernels::cuda {
namespace {

template <typename T>
__device__ T store_as(float v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else {
    return from_float<T>(v);
  }
}

template <typename T>
__global__ void fill_kernel(T* dst, int64_t n, float lo, float scale, uint64_t seed, bool random) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v =
        random ? __fmaf_rn(scale, uniform_from_hash(seed, static_cast<uint64_t>(i)), lo) : lo;
    dst[i] = store_as<T>(v);
  }
}

void launch(const Tensor& dst, float lo, float scale, uint64_t seed, bool random,
            backend::Stream stream) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((n + threads - 1) / threads, 132 * 32);
  auto s = backend::cuda::native_stream(stream);
  switch (dst.dtype()) {
    case DType::kF32:
      fill_kernel<<<blocks, threads, 0, s>>>(dst.data<float>(), n, lo, scale, seed, random);
      break;
    case DType::kBF16:
      fill_kernel<<<blocks, threads, 0, s>>>(static_cast<__nv_bfloat16*>(dst.raw()), n, lo, scale,
                                             seed, random);
      break;
    default:
      fill_kernel<<<blocks, threads, 0, s>>>(static_cast<__half*>(dst.raw()), n, lo, scale, seed,
                                             random);
  }
  SGL_CUDA_CHECK_LAUNCH();
}

}  // namespace

void fill_constant(const Tensor& dst, float value, backend::Stream stream) {
  launch(dst, value, 0.f, 0, false, stream);
}

void fill_uniform(const Tensor& dst, float lo, float hi, uint64_t seed, backend::Stream stream) {
  launch(dst, lo, hi - lo, seed, true, stream);
}

}  // namespace sgl::kernels::cuda
