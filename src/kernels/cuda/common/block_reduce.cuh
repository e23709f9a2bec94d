// Device helpers: warp and block reductions and prefix sums of 64-bit integers, doubles and
// (value, index) arg-max pairs. Every block-wide helper must be reached by all threads of the
// block (blockDim.x a multiple of 32, at most 1024) and may be called back to back.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace sgl::kernels::cuda {

using u64 = unsigned long long;  // the type CUDA's 64-bit atomics and shuffles take

constexpr unsigned kFullWarp = 0xffffffffu;

template <typename T>
__device__ __forceinline__ T warp_sum_of(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullWarp, v, offset);
  return v;
}

// Inclusive prefix sum over the lanes of a warp.
__device__ __forceinline__ u64 warp_inclusive_scan(u64 v) {
  const int lane = threadIdx.x % 32;
  for (int offset = 1; offset < 32; offset <<= 1) {
    const u64 up = __shfl_up_sync(kFullWarp, v, offset);
    if (lane >= offset) v += up;
  }
  return v;
}

// Sum over the block; every thread gets it.
template <typename T>
__device__ inline T block_sum_of(T v) {
  __shared__ T partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum_of(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  T total = 0;
  for (int w = 0; w < warps; ++w) total += partial[w];  // same order in every thread
  __syncthreads();                                      // partial is reused by the next call
  return total;
}

// Exclusive prefix sum over the block in thread order; `total` gets the block's sum.
__device__ inline u64 block_exclusive_scan(u64 v, u64& total) {
  __shared__ u64 warp_offset[33];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const u64 inclusive = warp_inclusive_scan(v);
  if (lane == 31) warp_offset[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    const u64 own = lane < warps ? warp_offset[lane] : 0;
    const u64 upto = warp_inclusive_scan(own);
    __syncwarp();
    if (lane < warps) warp_offset[lane] = upto - own;
    if (lane == 31) warp_offset[32] = upto;
  }
  __syncthreads();
  const u64 exclusive = warp_offset[warp] + inclusive - v;
  total = warp_offset[32];
  __syncthreads();
  return exclusive;
}

// Block maximum of a 64-bit value (e.g. a position); every thread gets it.
__device__ inline u64 block_max_of(u64 v) {
  __shared__ u64 partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int offset = 16; offset > 0; offset >>= 1) {
    const u64 other = __shfl_xor_sync(kFullWarp, v, offset);
    v = other > v ? other : v;
  }
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  u64 best = partial[0];
  for (int w = 1; w < warps; ++w) best = partial[w] > best ? partial[w] : best;
  __syncthreads();
  return best;
}

// A logit and its token id; ordered by value descending, then id ascending (first max wins).
struct ValueIndex {
  float value;
  int32_t index;
};

__device__ __forceinline__ bool ranks_before(ValueIndex a, ValueIndex b) {
  return a.value > b.value || (a.value == b.value && a.index < b.index);
}

// Ranks below every real (value, id), -inf included.
__device__ __forceinline__ ValueIndex lowest_value_index() { return {-INFINITY, INT32_MAX}; }

__device__ __forceinline__ ValueIndex warp_best(ValueIndex a) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const ValueIndex other{__shfl_xor_sync(kFullWarp, a.value, offset),
                           __shfl_xor_sync(kFullWarp, a.index, offset)};
    if (ranks_before(other, a)) a = other;
  }
  return a;
}

// The best (value, id) of the block by ranks_before; every thread gets it.
__device__ inline ValueIndex block_best(ValueIndex a) {
  __shared__ float values[32];
  __shared__ int32_t indices[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  a = warp_best(a);
  if (lane == 0) {
    values[warp] = a.value;
    indices[warp] = a.index;
  }
  __syncthreads();
  ValueIndex best = lowest_value_index();
  for (int w = 0; w < warps; ++w) {
    const ValueIndex other{values[w], indices[w]};
    if (ranks_before(other, best)) best = other;
  }
  __syncthreads();
  return best;
}

}  // namespace sgl::kernels::cuda
