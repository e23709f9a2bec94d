// Vectorized KV store: each thread copies 16 bytes of one new token's K and V into its slot.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "attention/cuda/flash_attention.h"
#include "attention/cuda/reference_attention.h"
#include "backend/cuda/cuda_check.h"
#include "kernels/cuda/common/pdl.cuh"

namespace sgl::attention::cuda {
namespace {

using bf16 = __nv_bfloat16;

struct StoreParams {
  const uint4* k;  // [T, heads, dim] as 16-byte chunks, rows strided
  const uint4* v;
  int64_t k_token_stride;  // in chunks
  int64_t k_head_stride;
  int64_t v_token_stride;
  int64_t v_head_stride;
  const int32_t* out_cache_loc;  // [T]
  uint4* k_cache;                // [slots, heads, dim] as chunks
  uint4* v_cache;
  int heads;
  int chunks;  // dim / 8
};

__global__ void store_kv_vectorized_kernel(const __grid_constant__ StoreParams p) {
  kernels::cuda::pdl_wait();
  kernels::cuda::pdl_launch_dependents();
  const int64_t t = blockIdx.x;
  const int64_t slot = p.out_cache_loc[t];
  for (int i = threadIdx.x; i < p.heads * p.chunks; i += blockDim.x) {
    const int h = i / p.chunks, c = i % p.chunks;
    const int64_t dst = (slot * p.heads + h) * p.chunks + c;
    p.k_cache[dst] = p.k[t * p.k_token_stride + h * p.k_head_stride + c];
    p.v_cache[dst] = p.v[t * p.v_token_stride + h * p.v_head_stride + c];
  }
}

struct RopeStoreParams {
  bf16* q;  // [T, Hq, D], rows strided
  int64_t q_token_stride, q_head_stride;
  const bf16* k;  // [T, Hk, D]
  int64_t k_token_stride, k_head_stride;
  const bf16* v;
  int64_t v_token_stride, v_head_stride;
  const int32_t* positions;      // [T]
  const float* cos_sin;          // [max_pos, D]: cos | sin
  const int32_t* out_cache_loc;  // [T]
  bf16* k_cache;                 // [slots, Hk, D]
  bf16* v_cache;
  int q_heads, kv_heads, dim;
};

// One block per (token, head) over q heads, then k heads, then v heads; thread i takes the
// pair (i, i + D / 2).
__global__ void rope_store_kv_kernel(const __grid_constant__ RopeStoreParams p) {
  kernels::cuda::pdl_wait();
  kernels::cuda::pdl_launch_dependents();
  const int64_t t = blockIdx.x;
  const int head = blockIdx.y, half = p.dim / 2, i = threadIdx.x;
  if (i >= half) return;
  if (head >= p.q_heads + p.kv_heads) {  // v: copied into its slot
    const int h = head - p.q_heads - p.kv_heads;
    const bf16* src = p.v + t * p.v_token_stride + h * p.v_head_stride;
    bf16* dst = p.v_cache + (static_cast<int64_t>(p.out_cache_loc[t]) * p.kv_heads + h) * p.dim;
    dst[i] = src[i];
    dst[i + half] = src[i + half];
    return;
  }
  const float* cos = p.cos_sin + static_cast<int64_t>(p.positions[t]) * p.dim;
  const float* sin = cos + half;
  const bool is_q = head < p.q_heads;
  const int h = is_q ? head : head - p.q_heads;
  const bf16* src = is_q ? p.q + t * p.q_token_stride + h * p.q_head_stride
                         : p.k + t * p.k_token_stride + h * p.k_head_stride;
  bf16* dst = is_q
                  ? p.q + t * p.q_token_stride + h * p.q_head_stride
                  : p.k_cache + (static_cast<int64_t>(p.out_cache_loc[t]) * p.kv_heads + h) * p.dim;
  // As kernels::rope: rotate in f32, round once.
  const float a = __bfloat162float(src[i]), b = __bfloat162float(src[i + half]);
  dst[i] = __float2bfloat16_rn(a * cos[i] - b * sin[i]);
  dst[i + half] = __float2bfloat16_rn(b * cos[i] + a * sin[i]);
}

bool chunk_aligned(const Tensor& t) {
  return reinterpret_cast<uintptr_t>(t.raw()) % 16 == 0 && t.stride(0) % 8 == 0 &&
         t.stride(1) % 8 == 0 && t.stride(2) == 1 && t.size(2) % 8 == 0;
}

}  // namespace

bool rope_store_kv(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                   const Tensor& cos_sin, const Tensor& out_cache_loc, const Tensor& k_cache,
                   const Tensor& v_cache, backend::Stream stream) {
  const int64_t tokens = q.size(0), dim = q.size(2);
  const bool fusable = q.dtype() == DType::kBF16 && k.dtype() == DType::kBF16 &&
                       v.dtype() == DType::kBF16 && k_cache.dtype() == DType::kBF16 &&
                       v_cache.dtype() == DType::kBF16 && cos_sin.dtype() == DType::kF32 &&
                       cos_sin.size(1) == dim && dim % 2 == 0 && dim <= 2048 && q.stride(2) == 1 &&
                       k.stride(2) == 1 && v.stride(2) == 1 && k_cache.is_contiguous() &&
                       v_cache.is_contiguous();
  if (!fusable) return false;
  if (tokens == 0) return true;
  const int q_heads = static_cast<int>(q.size(1)), kv_heads = static_cast<int>(k.size(1));
  const RopeStoreParams p{static_cast<bf16*>(q.raw()),
                          q.stride(0),
                          q.stride(1),
                          static_cast<const bf16*>(k.raw()),
                          k.stride(0),
                          k.stride(1),
                          static_cast<const bf16*>(v.raw()),
                          v.stride(0),
                          v.stride(1),
                          positions.data<int32_t>(),
                          cos_sin.data<float>(),
                          out_cache_loc.data<int32_t>(),
                          static_cast<bf16*>(k_cache.raw()),
                          static_cast<bf16*>(v_cache.raw()),
                          q_heads,
                          kv_heads,
                          static_cast<int>(dim)};
  const dim3 grid(static_cast<unsigned>(tokens), static_cast<unsigned>(q_heads + 2 * kv_heads));
  const int threads = static_cast<int>((dim / 2 + 31) / 32 * 32);
  kernels::cuda::launch_pdl(rope_store_kv_kernel, grid, threads, 0,
                            static_cast<cudaStream_t>(stream.native), p);
  return true;
}

void store_kv_vectorized(const Tensor& k, const Tensor& v, const Tensor& out_cache_loc,
                         const Tensor& k_cache, const Tensor& v_cache, backend::Stream stream) {
  const int64_t tokens = k.size(0);
  if (tokens == 0) return;
  if (!chunk_aligned(k) || !chunk_aligned(v) || !k_cache.is_contiguous() ||
      !v_cache.is_contiguous()) {
    store_kv(k, v, out_cache_loc, k_cache, v_cache, stream);
    return;
  }
  SGL_CHECK(k.dtype() == DType::kBF16 && k_cache.dtype() == DType::kBF16)
      << "CUDA attention runs in bf16";
  const int heads = static_cast<int>(k.size(1)), chunks = static_cast<int>(k.size(2) / 8);
  const StoreParams p{static_cast<const uint4*>(k.raw()),
                      static_cast<const uint4*>(v.raw()),
                      k.stride(0) / 8,
                      k.stride(1) / 8,
                      v.stride(0) / 8,
                      v.stride(1) / 8,
                      out_cache_loc.data<int32_t>(),
                      static_cast<uint4*>(k_cache.raw()),
                      static_cast<uint4*>(v_cache.raw()),
                      heads,
                      chunks};
  const int threads = std::min(256, (heads * chunks + 31) / 32 * 32);
  kernels::cuda::launch_pdl(store_kv_vectorized_kernel, dim3(static_cast<unsigned>(tokens)),
                            threads, 0, static_cast<cudaStream_t>(stream.native), p);
}

}  // namespace sgl::attention::cuda
