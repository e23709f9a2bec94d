// Device helper: bitonic sort of 64-bit keys in shared memory by one block.
#pragma once

#include <cuda_runtime.h>

namespace sgl::kernels::cuda {

// Sorts keys[0, n) descending; n is a power of two. All kThreads threads of the block call it.
template <int kThreads>
__device__ void block_sort_descending(unsigned long long* keys, unsigned n) {
  for (unsigned size = 2; size <= n; size <<= 1) {
    for (unsigned stride = size >> 1; stride > 0; stride >>= 1) {
      for (unsigned t = threadIdx.x; t < n / 2; t += kThreads) {
        const unsigned i = 2 * t - (t & (stride - 1)), j = i + stride;
        const unsigned long long a = keys[i], b = keys[j];
        const bool descending = (i & size) == 0;
        if (descending ? a < b : a > b) {
          keys[i] = b;
          keys[j] = a;
        }
      }
      __syncthreads();
    }
  }
}

}  // namespace sgl::kernels::cuda
