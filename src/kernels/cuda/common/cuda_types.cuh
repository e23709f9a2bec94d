// Device helpers: load/store as float for f32 and bf16, SiLU-and-mul rounding, warp and block
// sums.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace sgl::kernels::cuda {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// silu(gate) * up rounded as transformers' unfused ops round in dtype T: gate and up as stored
// in T, silu(gate) in T, then the product (which the caller stores as T). Every SiLU-and-mul
// path (the op and the GEMMs' fused epilogues) goes through this, so they agree bit for bit.
template <typename T>
__device__ __forceinline__ float silu_mul(float gate, float up) {
  const float g = to_float(from_float<T>(gate)), u = to_float(from_float<T>(up));
  return to_float(from_float<T>(g / (1.f + __expf(-g)))) * u;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the total.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / 32;
  v = (threadIdx.x < warps) ? partial[threadIdx.x] : 0.f;
  if (warp == 0) v = warp_sum(v);
  if (threadIdx.x == 0) partial[0] = v;
  __syncthreads();
  const float total = partial[0];
  __syncthreads();  // partial is reused by the next call
  return total;
}

}  // namespace sgl::kernels::cuda
