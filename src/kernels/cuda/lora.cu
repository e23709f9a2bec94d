// CUDA LoRA update: y += scaling * (x A^T) B^T for one adapter's rows, in two small kernels (the
// rank is small, 8-256: the shrink is a row of dot products per token, the expand an outer
// product), f32 adapters and accumulation, x and y in the model's dtype.
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "kernels/cuda/common/cuda_types.cuh"
#include "kernels/cuda/common/dispatch.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace sgl::kernels::cuda {
namespace {

constexpr int kTokens = 8;     // the token rows a block takes: A and B are read once per tile
constexpr int kThreads = 256;  // 8 warps

// shrunk[t, j] = sum_k x[t, k] a[j, k]. Block per kTokens rows; warp w takes ranks w, w + 8, ...,
// its lanes striding over k, the sums in a fixed order (deterministic).
template <typename T>
__global__ void lora_shrink_kernel(const T* __restrict__ x, int64_t x_stride,
                                   const float* __restrict__ a, float* __restrict__ shrunk,
                                   int64_t rows, int64_t k_dim, int rank) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kTokens;
  const int tokens = static_cast<int>(rows - first < kTokens ? rows - first : kTokens);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int j = warp; j < rank; j += kThreads / 32) {
    float acc[kTokens] = {};
    const float* a_row = a + static_cast<int64_t>(j) * k_dim;
    for (int64_t k = lane; k < k_dim; k += 32) {
      const float w = a_row[k];
#pragma unroll
      for (int t = 0; t < kTokens; ++t) {
        if (t < tokens) acc[t] += to_float(x[(first + t) * x_stride + k]) * w;
      }
    }
#pragma unroll
    for (int t = 0; t < kTokens; ++t) {
      const float sum = warp_sum(acc[t]);
      if (lane == 0 && t < tokens) shrunk[(first + t) * rank + j] = sum;
    }
  }
}

// y[t, n] += scaling * sum_j shrunk[t, j] b[n, j]. Block per (kThreads columns, kTokens rows),
// each thread one column; every thread of a block reads the same shrunk value at once (one
// broadcast load), so any rank fits.
template <typename T>
__global__ void lora_expand_kernel(const float* __restrict__ shrunk, const float* __restrict__ b,
                                   float scaling, T* __restrict__ y, int64_t y_stride, int64_t rows,
                                   int64_t n_dim, int rank) {
  const int64_t first = static_cast<int64_t>(blockIdx.y) * kTokens;
  const int tokens = static_cast<int>(rows - first < kTokens ? rows - first : kTokens);
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (n >= n_dim) return;
  float acc[kTokens] = {};
  const float* b_row = b + n * rank;
  const float* tile = shrunk + first * rank;  // [tokens, rank]
  for (int j = 0; j < rank; ++j) {
    const float w = b_row[j];
#pragma unroll
    for (int t = 0; t < kTokens; ++t) {
      if (t < tokens) acc[t] += tile[t * rank + j] * w;
    }
  }
  for (int t = 0; t < tokens; ++t) {
    T& out = y[(first + t) * y_stride + n];
    out = from_float<T>(to_float(out) + scaling * acc[t]);
  }
}

}  // namespace

void add_lora(const Tensor& x, const Tensor& a, const Tensor& b, float scaling,
              const Tensor& shrunk, const Tensor& y, backend::Stream stream) {
  const int64_t rows = x.size(0), k_dim = x.size(1), n_dim = y.size(1);
  const int rank = static_cast<int>(a.size(0));
  if (rows == 0) return;
  const auto tiles = static_cast<unsigned>((rows + kTokens - 1) / kTokens);
  cudaStream_t s = backend::cuda::native_stream(stream);
  SGL_DISPATCH_FLOAT(x.dtype(), T, {
    lora_shrink_kernel<T><<<tiles, kThreads, 0, s>>>(static_cast<const T*>(x.raw()), x.stride(0),
                                                     a.data<float>(), shrunk.data<float>(), rows,
                                                     k_dim, rank);
    SGL_CUDA_CHECK_LAUNCH();
    const dim3 grid(static_cast<unsigned>((n_dim + kThreads - 1) / kThreads), tiles);
    lora_expand_kernel<T><<<grid, kThreads, 0, s>>>(shrunk.data<float>(), b.data<float>(), scaling,
                                                    static_cast<T*>(y.raw()), y.stride(0), rows,
                                                    n_dim, rank);
  });
  SGL_CUDA_CHECK_LAUNCH();
}

}  // namespace sgl::kernels::cuda
