// Vectorized KV store: each thread copies 16 bytes of one new token's K and V into its slot.
#include <algorithm>
#include <cstdint>

#include "attention/cuda/flash_attention.h"
#include "attention/cuda/reference_attention.h"
#include "backend/cuda/cuda_check.h"

namespace sgl::attention::cuda {
namespace {

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
  const int64_t t = blockIdx.x;
  const int64_t slot = p.out_cache_loc[t];
  for (int i = threadIdx.x; i < p.heads * p.chunks; i += blockDim.x) {
    const int h = i / p.chunks, c = i % p.chunks;
    const int64_t dst = (slot * p.heads + h) * p.chunks + c;
    p.k_cache[dst] = p.k[t * p.k_token_stride + h * p.k_head_stride + c];
    p.v_cache[dst] = p.v[t * p.v_token_stride + h * p.v_head_stride + c];
  }
}

bool chunk_aligned(const Tensor& t) {
  return reinterpret_cast<uintptr_t>(t.raw()) % 16 == 0 && t.stride(0) % 8 == 0 &&
         t.stride(1) % 8 == 0 && t.stride(2) == 1 && t.size(2) % 8 == 0;
}

}  // namespace

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
  store_kv_vectorized_kernel<<<static_cast<unsigned>(tokens), threads, 0,
                               static_cast<cudaStream_t>(stream.native)>>>(p);
  SGL_CUDA_CHECK_LAUNCH();
}

}  // namespace sgl::attention::cuda
