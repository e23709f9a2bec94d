// What the two Hopper GEMM kernels share (hopper_gemm.cu: a CTA per output tile;
// hopper_grouped_gemm.cu: persistent CTAs over grouped tiles): a CTA of three warpgroups, one
// producer thread filling a shared-memory ring of k-blocks with TMA and two consumer warpgroups
// of 64 weight rows each, and the ring's setup. Host code reads the shapes too (tensor-map boxes,
// launch sizes).
#pragma once

#include <cuda.h>

#include <cstdint>

#include "kernels/cuda/common/hopper_async.cuh"

namespace sgl::kernels::cuda::hopper {

inline constexpr int kBlockK = 64;    // k per stage: one 128-byte swizzle row of bf16
inline constexpr int kHalfRows = 64;  // weight rows per consumer warpgroup (wgmma M)
inline constexpr int kHalfBytes = kHalfRows * kBlockK * 2;
inline constexpr int kThreads = 3 * 128;  // producer + 2 consumer warpgroups
// Registers per thread after the split: 128 x 40 + 256 x 232 <= 64K.
inline constexpr int kProducerRegs = 40, kConsumerRegs = 232;

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// Thread 0's part of the setup: each stage's `full` barrier (the producer's arrival and the TMA
// bytes) and `empty` barrier (`releases` arrivals), and both tensor maps fetched. The block (or
// cluster) synchronizes after it.
__device__ __forceinline__ void init_ring(uint64_t* full, uint64_t* empty, int stages, int releases,
                                          const CUtensorMap* w_map, const CUtensorMap* x_map) {
  for (int s = 0; s < stages; ++s) {
    mbarrier_init(&full[s], 1);
    mbarrier_init(&empty[s], releases);
  }
  fence_barrier_init();
  prefetch_tensor_map(w_map);
  prefetch_tensor_map(x_map);
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

}  // namespace sgl::kernels::cuda::hopper
