// KV store: each new token's K and V into its slot (16 bytes per thread when rows allow), alone
// or fused with RoPE.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "attention/cuda/kv_format.cuh"
#include "attention/cuda/kv_store.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "core/alignment.h"
#include "kernels/cuda/common/cuda_types.cuh"
#include "kernels/cuda/common/dispatch.cuh"
#include "kernels/cuda/common/head_rms_norm.cuh"
#include "kernels/cuda/common/pdl.cuh"
#include "kernels/cuda/common/rotate_half.cuh"

namespace sgl::attention::cuda {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kRopeStoreThreads = 512;  // per block of rope_store_kv_kernel (several heads)

// k_cache[loc[t], h, :] = k[t, h, :] and the same for v, in units of T (16-byte chunks when the
// rows allow, else elements); strides are in units too.
template <typename T>
__global__ void store_kv_kernel(const T* k, int64_t k_tok, int64_t k_head, const T* v,
                                int64_t v_tok, int64_t v_head, const int32_t* loc, T* k_cache,
                                T* v_cache, int heads, int units) {
  kernels::cuda::pdl_wait();
  kernels::cuda::pdl_launch_dependents();
  const int64_t t = blockIdx.x;
  const int64_t slot = loc[t];
  for (int i = threadIdx.x; i < heads * units; i += blockDim.x) {
    const int h = i / units, u = i % units;
    k_cache[(slot * heads + h) * units + u] = k[t * k_tok + h * k_head + u];
    v_cache[(slot * heads + h) * units + u] = v[t * v_tok + h * v_head + u];
  }
}

template <typename T>
void launch_store(const Tensor& k, const Tensor& v, const Tensor& out_cache_loc,
                  const Tensor& k_cache, const Tensor& v_cache, int64_t per_unit,
                  cudaStream_t stream) {
  const int heads = static_cast<int>(k.size(1)), units = static_cast<int>(k.size(2) / per_unit);
  const int threads = std::min(256, (heads * units + 31) / 32 * 32);
  kernels::cuda::launch_pdl(store_kv_kernel<T>, dim3(static_cast<unsigned>(k.size(0))), threads, 0,
                            stream, static_cast<const T*>(k.raw()), k.stride(0) / per_unit,
                            k.stride(1) / per_unit, static_cast<const T*>(v.raw()),
                            v.stride(0) / per_unit, v.stride(1) / per_unit,
                            out_cache_loc.data<int32_t>(), static_cast<T*>(k_cache.raw()),
                            static_cast<T*>(v_cache.raw()), heads, units);
}

// The same into an FP8 cache: each value / scale as its code (inverse scales given), one value a
// thread.
template <typename T, KvFormat kFormat>
__global__ void store_kv_fp8_kernel(const T* k, int64_t k_tok, int64_t k_head, const T* v,
                                    int64_t v_tok, int64_t v_head, const int32_t* loc,
                                    uint8_t* k_cache, uint8_t* v_cache, int heads, int dim,
                                    float k_inverse_scale, float v_inverse_scale) {
  kernels::cuda::pdl_wait();
  kernels::cuda::pdl_launch_dependents();
  const int64_t t = blockIdx.x;
  const int64_t slot = loc[t];
  for (int i = threadIdx.x; i < heads * dim; i += blockDim.x) {
    const int h = i / dim, d = i % dim;
    const int64_t at = (slot * heads + h) * dim + d;
    k_cache[at] = narrow_fp8<kFormat>(kernels::cuda::to_float(k[t * k_tok + h * k_head + d]),
                                      k_inverse_scale);
    v_cache[at] = narrow_fp8<kFormat>(kernels::cuda::to_float(v[t * v_tok + h * v_head + d]),
                                      v_inverse_scale);
  }
}

template <typename T, KvFormat kFormat>
void launch_store_fp8(const Tensor& k, const Tensor& v, const Tensor& out_cache_loc,
                      const LayerKv& cache, cudaStream_t stream) {
  const int heads = static_cast<int>(k.size(1)), dim = static_cast<int>(k.size(2));
  const int threads = std::min(256, (heads * dim + 31) / 32 * 32);
  kernels::cuda::launch_pdl(
      store_kv_fp8_kernel<T, kFormat>, dim3(static_cast<unsigned>(k.size(0))), threads, 0, stream,
      static_cast<const T*>(k.raw()), k.stride(0), k.stride(1), static_cast<const T*>(v.raw()),
      v.stride(0), v.stride(1), out_cache_loc.data<int32_t>(), static_cast<uint8_t*>(cache.k.raw()),
      static_cast<uint8_t*>(cache.v.raw()), heads, dim, 1.f / cache.scales.k, 1.f / cache.scales.v);
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
  // Per-head RMSNorm of q and k before the rotation (nullptr: none); kVec == 4, dim 64 or 128.
  const bf16* q_norm;  // [D]
  const bf16* k_norm;  // [D]
  float norm_eps;
};

// kVec consecutive bf16 (1, or 4 as one 8-byte access) from src into f32, and back.
template <int kVec>
__device__ __forceinline__ void load_bf16(const bf16* src, float (&out)[kVec]) {
  if constexpr (kVec == 4) {
    const uint2 raw = *reinterpret_cast<const uint2*>(src);
    const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
    const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
    out[0] = lo.x, out[1] = lo.y, out[2] = hi.x, out[3] = hi.y;
  } else {
    out[0] = __bfloat162float(src[0]);
  }
}
template <int kVec>
__device__ __forceinline__ void store_bf16(bf16* dst, const bf16 (&in)[kVec]) {
  if constexpr (kVec == 4) {
    *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<const uint2*>(in);
  } else {
    dst[0] = in[0];
  }
}
template <int kVec>
__device__ __forceinline__ void copy_bf16(const bf16* src, bf16* dst) {
  if constexpr (kVec == 4) {
    *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<const uint2*>(src);
  } else {
    dst[0] = src[0];
  }
}

// Heads are numbered q heads, then k heads, then v heads; block (t, y) takes token t's heads
// [y blockDim.y, (y + 1) blockDim.y), thread (i, j) the kVec pairs (i kVec + e, i kVec + e +
// D / 2) of the j-th. (A block per head was launch-bound at prefill sizes, and one pair a
// thread with 2-byte accesses slower: docs/perf-log/2026-11-28-moe-hopper-grouped.md.)
template <int kVec>
__global__ void rope_store_kv_kernel(const __grid_constant__ RopeStoreParams p) {
  const int64_t t = blockIdx.x;
  const int head = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int half = p.dim / 2, i = static_cast<int>(threadIdx.x) * kVec;
  if (i >= half || head >= p.q_heads + 2 * p.kv_heads) return;
  const bool is_q = head < p.q_heads, is_v = head >= p.q_heads + p.kv_heads;
  // Positions, slots and the cos/sin table are no kernel's output in a forward pass: read
  // before the wait (pdl.cuh).
  const int64_t slot = is_q ? 0 : p.out_cache_loc[t];
  float c[kVec] = {}, s[kVec] = {};
  if (!is_v) {
    const float* row = p.cos_sin + static_cast<int64_t>(p.positions[t]) * p.dim;
    if constexpr (kVec == 4) {
      const float4 cv = *reinterpret_cast<const float4*>(row + i);
      const float4 sv = *reinterpret_cast<const float4*>(row + half + i);
      c[0] = cv.x, c[1] = cv.y, c[2] = cv.z, c[3] = cv.w;
      s[0] = sv.x, s[1] = sv.y, s[2] = sv.z, s[3] = sv.w;
    } else {
      c[0] = row[i], s[0] = row[half + i];
    }
  }
  kernels::cuda::pdl_wait();
  kernels::cuda::pdl_launch_dependents();
  if (is_v) {  // v: copied into its slot
    const int h = head - p.q_heads - p.kv_heads;
    const bf16* src = p.v + t * p.v_token_stride + h * p.v_head_stride;
    bf16* dst = p.v_cache + (slot * p.kv_heads + h) * p.dim;
    copy_bf16<kVec>(src + i, dst + i);
    copy_bf16<kVec>(src + i + half, dst + i + half);
    return;
  }
  const int h = is_q ? head : head - p.q_heads;
  const bf16* src = is_q ? p.q + t * p.q_token_stride + h * p.q_head_stride
                         : p.k + t * p.k_token_stride + h * p.k_head_stride;
  bf16* dst = is_q ? p.q + t * p.q_token_stride + h * p.q_head_stride
                   : p.k_cache + (slot * p.kv_heads + h) * p.dim;
  float a[kVec], b[kVec];
  load_bf16<kVec>(src + i, a);
  load_bf16<kVec>(src + i + half, b);
  if constexpr (kVec == 4) {
    if (p.q_norm != nullptr) {  // a head's threads are blockDim.x consecutive lanes
      const int lane = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x) % 32;
      const bf16* weight = is_q ? p.q_norm : p.k_norm;
      if (p.dim == 128) {
        kernels::cuda::HeadRmsNorm<128, 4>::apply(a, b, weight, threadIdx.x, lane, p.norm_eps);
      } else {
        kernels::cuda::HeadRmsNorm<64, 4>::apply(a, b, weight, threadIdx.x, lane, p.norm_eps);
      }
    }
  }
  bf16 lo[kVec], hi[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e)
    kernels::cuda::rotate_half_values(a[e], b[e], c[e], s[e], lo[e], hi[e]);
  store_bf16<kVec>(dst + i, lo);
  store_bf16<kVec>(dst + i + half, hi);
}

// Rows of t ([T, heads, D]) are whole 16-byte chunks at 16-byte addresses.
bool chunk_aligned(const Tensor& t, int64_t per_chunk) {
  return is_aligned(t.raw(), 16) && t.stride(0) % per_chunk == 0 && t.stride(1) % per_chunk == 0 &&
         t.stride(2) == 1 && t.size(2) % per_chunk == 0;
}

}  // namespace

bool qk_norm_fusable(const Tensor& q, const QkNorm& norm) {
  const int64_t dim = q.size(2);
  auto weight_ok = [dim](const Tensor& w) {
    return w.dtype() == DType::kBF16 && w.is_contiguous() && w.numel() == dim;
  };
  return q.dtype() == DType::kBF16 && (dim == 64 || dim == 128) && weight_ok(norm.q_weight) &&
         weight_ok(norm.k_weight);
}

bool rope_store_kv(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                   const Tensor& cos_sin, const Tensor& out_cache_loc, const LayerKv& cache,
                   backend::Stream stream, const QkNorm* qk_norm) {
  const int64_t tokens = q.size(0), dim = q.size(2);
  const Tensor& k_cache = cache.k;
  const Tensor& v_cache = cache.v;
  // The rope arguments were checked (kernels::check_rope_args); what this kernel adds:
  const bool fusable = q.dtype() == DType::kBF16 && k.dtype() == DType::kBF16 &&
                       v.dtype() == DType::kBF16 && k_cache.dtype() == DType::kBF16 &&
                       v_cache.dtype() == DType::kBF16 && dim <= 2048 && v.stride(2) == 1 &&
                       k_cache.is_contiguous() && v_cache.is_contiguous();
  if (!fusable || (qk_norm != nullptr && !qk_norm_fusable(q, *qk_norm))) return false;
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
                          static_cast<int>(dim),
                          qk_norm ? static_cast<const bf16*>(qk_norm->q_weight.raw()) : nullptr,
                          qk_norm ? static_cast<const bf16*>(qk_norm->k_weight.raw()) : nullptr,
                          qk_norm ? qk_norm->eps : 0.f};
  // Four pairs a thread (8-byte accesses) where every row and table row allows it.
  auto rows_of_4 = [](const Tensor& t) {
    return is_aligned(t.raw(), 8) && t.stride(0) % 4 == 0 && t.stride(1) % 4 == 0;
  };
  const bool vec4 = dim % 8 == 0 && rows_of_4(q) && rows_of_4(k) && rows_of_4(v) &&
                    is_aligned(k_cache.raw(), 8) && is_aligned(v_cache.raw(), 8) &&
                    is_aligned(cos_sin.raw(), 16);
  if (qk_norm != nullptr && !vec4) return false;  // the norm's layout is four pairs a thread
  if (tokens == 0) return true;
  const int vec = vec4 ? 4 : 1;
  const int lanes = static_cast<int>(dim / 2 / vec);
  const int threads = vec4 ? lanes : (lanes + 31) / 32 * 32;
  // A token's heads over as few blocks of at most kRopeStoreThreads as hold them, shared evenly
  // (Qwen3-30B-A3B's 40 heads of 16 threads: 2 x 20, not 32 + 8).
  const int heads = q_heads + 2 * kv_heads;
  const int most_per_block = std::max(1, kRopeStoreThreads / threads);
  const int blocks_per_token = (heads + most_per_block - 1) / most_per_block;
  const int heads_per_block = (heads + blocks_per_token - 1) / blocks_per_token;
  const dim3 grid(static_cast<unsigned>(tokens),
                  static_cast<unsigned>((heads + heads_per_block - 1) / heads_per_block));
  kernels::cuda::launch_pdl(
      vec4 ? rope_store_kv_kernel<4> : rope_store_kv_kernel<1>, grid,
      dim3(static_cast<unsigned>(threads), static_cast<unsigned>(heads_per_block)), 0,
      backend::cuda::native_stream(stream), p);
  return true;
}

void store_kv(const Tensor& k, const Tensor& v, const Tensor& out_cache_loc, const LayerKv& cache,
              backend::Stream stream) {
  if (k.size(0) == 0) return;
  const Tensor& k_cache = cache.k;
  const Tensor& v_cache = cache.v;
  const auto native = backend::cuda::native_stream(stream);
  if (is_fp8_kv(k_cache.dtype())) {
    SGL_CHECK(k.dtype() == v.dtype() && v_cache.dtype() == k_cache.dtype())
        << "store_kv: k " << dtype_name(k.dtype()) << ", v " << dtype_name(v.dtype()) << " into "
        << dtype_name(k_cache.dtype()) << " / " << dtype_name(v_cache.dtype()) << " caches";
    const bool e4m3 = k_cache.dtype() == DType::kF8E4M3;
    SGL_DISPATCH_FLOAT(k.dtype(), T, {
      e4m3 ? launch_store_fp8<T, KvFormat::kE4M3>(k, v, out_cache_loc, cache, native)
           : launch_store_fp8<T, KvFormat::kE5M2>(k, v, out_cache_loc, cache, native);
    });
    return;
  }
  SGL_CHECK(k.dtype() == k_cache.dtype() && v.dtype() == v_cache.dtype())
      << "store_kv: k " << dtype_name(k.dtype()) << " into a " << dtype_name(k_cache.dtype())
      << " cache";
  const int64_t per_chunk = 16 / static_cast<int64_t>(dtype_size(k.dtype()));
  if (chunk_aligned(k, per_chunk) && chunk_aligned(v, per_chunk) &&
      chunk_aligned(k_cache, per_chunk) && chunk_aligned(v_cache, per_chunk)) {
    launch_store<uint4>(k, v, out_cache_loc, k_cache, v_cache, per_chunk, native);
    return;
  }
  SGL_DISPATCH_FLOAT(k.dtype(), T,
                     { launch_store<T>(k, v, out_cache_loc, k_cache, v_cache, 1, native); });
}

}  // namespace sgl::attention::cuda
