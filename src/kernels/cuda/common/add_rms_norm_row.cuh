// The fused residual add + RMSNorm of bf16 rows over an f32 residual, in 16-byte chunks of 8
// values: the pieces norm_rope.cu's kernel, the custom all-reduce's fused kernel
// (distributed/peer_all_reduce.cu) and the GEMV that folds the norm in (gemv.cu) share, so that
// their bits agree: the block a row gets, a chunk's add into the residual, and a chunk's output.
// (The sum of a row's squares: each thread's chunks in order, then block_sum.)
#pragma once

#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace sgl::kernels::cuda {

// A row's block: thread t holds chunks t, t + threads, ... (kAddRmsNormMaxChunksPerThread at
// most).
constexpr int kAddRmsNormMaxThreads = 1024;
constexpr int kAddRmsNormMaxChunksPerThread = 4;
inline int add_rms_norm_threads(int64_t chunks) {
  return static_cast<int>(std::min<int64_t>(kAddRmsNormMaxThreads, (chunks + 31) / 32 * 32));
}

// Calls f(std::integral_constant<int, K>{}, threads) for a row of `chunks`: the block's
// add_rms_norm_threads(chunks) threads and K the chunks each holds (1, 2 or 4: the kernel
// instance).
template <typename F>
void with_add_rms_norm_chunks(int64_t chunks, F&& f) {
  const int threads = add_rms_norm_threads(chunks);
  const int64_t per_thread = (chunks + threads - 1) / threads;
  if (per_thread == 1) {
    f(std::integral_constant<int, 1>{}, threads);
  } else if (per_thread == 2) {
    f(std::integral_constant<int, 2>{}, threads);
  } else {
    f(std::integral_constant<int, kAddRmsNormMaxChunksPerThread>{}, threads);
  }
}

// v = x + residual for one chunk (x: 8 bf16 values; residual: the chunk's 8 f32 values), their
// squares added to sum_sq in order.
__device__ __forceinline__ void add_chunk(const uint4 x, const float4* residual, float (&v)[8],
                                          float& sum_sq) {
  const __nv_bfloat16* xb = reinterpret_cast<const __nv_bfloat16*>(&x);
  const float4 r0 = residual[0], r1 = residual[1];
  const float r[8] = {r0.x, r0.y, r0.z, r0.w, r1.x, r1.y, r1.z, r1.w};
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    v[e] = __bfloat162float(xb[e]) + r[e];
    sum_sq += v[e] * v[e];
  }
}

__device__ __forceinline__ void store_chunk(const float (&v)[8], float4* out) {
  out[0] = make_float4(v[0], v[1], v[2], v[3]);
  out[1] = make_float4(v[4], v[5], v[6], v[7]);
}

// add_chunk with the chunk's residual updated to v.
__device__ __forceinline__ void add_chunk_into_residual(const uint4 x, float4* residual,
                                                        float (&v)[8], float& sum_sq) {
  add_chunk(x, residual, v, sum_sq);
  store_chunk(v, residual);
}

// A chunk's output, weight (8 bf16 values) x v normalized by inv (1 / the row's RMS): as
// transformers, normalized in f32, rounded to bf16, then scaled.
__device__ __forceinline__ uint4 normed_chunk(const float (&v)[8], float inv, const uint4 weight) {
  const __nv_bfloat16* wb = reinterpret_cast<const __nv_bfloat16*>(&weight);
  uint4 out;
  __nv_bfloat16* ob = reinterpret_cast<__nv_bfloat16*>(&out);
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const float normed = __bfloat162float(__float2bfloat16_rn(v[e] * inv));
    ob[e] = __float2bfloat16_rn(__bfloat162float(wb[e]) * normed);
  }
  return out;
}

}  // namespace sgl::kernels::cuda
