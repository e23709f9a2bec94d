// Device helper: one block streams one row of floats with several loads in flight per thread.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace sgl::kernels::cuda {

// Loads each thread keeps in flight: a pass that computes on every element is bound by memory
// latency with one.
constexpr int kLoadsInFlight = 8;

// Calls fn(i, valid, x) for every element i of row[0, n), x = row[i] (-inf and valid = false
// past the end), in steps of kThreads * kLoadsInFlight elements. Every thread of the block
// (kThreads of them) makes the same number of calls, so fn may use warp votes and shuffles; the
// 32 calls a warp makes together cover 32 consecutive, 32-aligned ids.
template <int kThreads, typename Fn>
__device__ __forceinline__ void for_each_token(const float* row, int32_t n, Fn fn) {
  for (int32_t base = 0; base < n; base += kThreads * kLoadsInFlight) {
    float x[kLoadsInFlight];
#pragma unroll
    for (int u = 0; u < kLoadsInFlight; ++u) {
      const int32_t i = base + u * kThreads + static_cast<int32_t>(threadIdx.x);
      x[u] = i < n ? row[i] : -INFINITY;
    }
#pragma unroll
    for (int u = 0; u < kLoadsInFlight; ++u) {
      const int32_t i = base + u * kThreads + static_cast<int32_t>(threadIdx.x);
      fn(i, i < n, x[u]);
    }
  }
}

}  // namespace sgl::kernels::cuda
