// Reference CUDA paged attention: simple, obviously correct, used to check the fast kernels
// and to run golden parity. One warp per (query token, q head); f32 online softmax.
#include "attention/cuda/kv_format.cuh"
#include "attention/cuda/reference_attention.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "kernels/cuda/common/cuda_types.cuh"
#include "kernels/cuda/common/dispatch.cuh"

namespace sgl::attention::cuda {
namespace {

using kernels::cuda::from_float;
using kernels::cuda::to_float;
using kernels::cuda::warp_sum;

constexpr int kMaxDimsPerLane = 8;  // head_dim <= 256

struct AttnParams {
  const void* q;
  int64_t q_tok, q_head;
  const void* k_cache;
  const void* v_cache;
  void* out;
  const int32_t* qo_indptr;    // [bs + 1]
  const int32_t* prefix_lens;  // [bs]
  const int32_t* kv_indptr;    // [bs + 1]
  const int32_t* kv_indices;   // [total kv]
  const uint64_t* tree_mask;   // [T] (ForwardBatch::tree_mask) or null: causal
  int batch_size, q_heads, kv_heads, dim;
  float scale;
  float k_scale, v_scale;  // FP8 caches'
};

// Element i of a cache stored as T (kStored kBF16: "as q") or as FP8 codes, in f32.
template <typename T, KvFormat kStored>
__device__ __forceinline__ float cache_value(const void* cache, int64_t i, float scale) {
  if constexpr (kIsFp8<kStored>) {
    return widen_fp8<kStored>(static_cast<const uint8_t*>(cache)[i], scale);
  } else {
    return to_float(static_cast<const T*>(cache)[i]);
  }
}

template <typename T, KvFormat kStored>
__global__ void reference_attention_kernel(AttnParams p) {
  const int t = blockIdx.x, h = blockIdx.y, lane = threadIdx.x;
  // The request owning query row t.
  int lo = 0, hi = p.batch_size - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (p.qo_indptr[mid] <= t)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int b = lo;
  const int prefix = p.prefix_lens[b];
  const int kv_len = prefix + (t - p.qo_indptr[b]) + 1;  // a tree node's ancestors precede it
  const uint64_t* tree_row = p.tree_mask != nullptr ? p.tree_mask + t : nullptr;
  const int32_t* slots = p.kv_indices + p.kv_indptr[b];
  const int kvh = h / (p.q_heads / p.kv_heads);
  const T* q = static_cast<const T*>(p.q) + t * p.q_tok + h * p.q_head;
  float qv[kMaxDimsPerLane], acc[kMaxDimsPerLane];
  for (int i = 0; i < kMaxDimsPerLane; ++i) {
    const int d = lane + 32 * i;
    qv[i] = d < p.dim ? to_float(q[d]) : 0.f;
    acc[i] = 0.f;
  }
  float m = -INFINITY, l = 0.f;
  for (int j = 0; j < kv_len; ++j) {
    if (tree_row != nullptr && j >= prefix && ((*tree_row >> (j - prefix)) & 1) == 0) {
      continue;  // not an ancestor (the warp agrees: one token per warp)
    }
    const int64_t base = (static_cast<int64_t>(slots[j]) * p.kv_heads + kvh) * p.dim;
    float dot = 0.f;
    for (int i = 0; i < kMaxDimsPerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < p.dim) dot += qv[i] * cache_value<T, kStored>(p.k_cache, base + d, p.k_scale);
    }
    const float s = warp_sum(dot) * p.scale;
    const float m_new = fmaxf(m, s);
    const float correction = __expf(m - m_new), w = __expf(s - m_new);
    l = l * correction + w;
    for (int i = 0; i < kMaxDimsPerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < p.dim) {
        acc[i] = acc[i] * correction + w * cache_value<T, kStored>(p.v_cache, base + d, p.v_scale);
      }
    }
    m = m_new;
  }
  T* out = static_cast<T*>(p.out) + (static_cast<int64_t>(t) * p.q_heads + h) * p.dim;
  for (int i = 0; i < kMaxDimsPerLane; ++i) {
    const int d = lane + 32 * i;
    if (d < p.dim) out[d] = from_float<T>(acc[i] / l);
  }
}

}  // namespace

void reference_attention(const Tensor& q, const LayerKv& cache, const Tensor& out,
                         const ForwardBatch& fb, float scale, backend::Stream stream) {
  if (fb.num_tokens == 0) return;
  const Tensor& k_cache = cache.k;
  const Tensor& v_cache = cache.v;
  SGL_CHECK(q.size(2) <= 32 * kMaxDimsPerLane) << "head_dim " << q.size(2) << " > 256";
  AttnParams p{q.raw(),
               q.stride(0),
               q.stride(1),
               k_cache.raw(),
               v_cache.raw(),
               out.raw(),
               fb.qo_indptr.data<int32_t>(),
               fb.extend_prefix_lens.data<int32_t>(),
               fb.kv_indptr.data<int32_t>(),
               fb.kv_indices.data<int32_t>(),
               fb.tree_mask.defined() ? static_cast<const uint64_t*>(fb.tree_mask.raw()) : nullptr,
               fb.batch_size,
               static_cast<int>(q.size(1)),
               static_cast<int>(k_cache.size(1)),
               static_cast<int>(q.size(2)),
               scale,
               cache.scales.k,
               cache.scales.v};
  const dim3 grid(static_cast<unsigned>(fb.num_tokens), static_cast<unsigned>(q.size(1)));
  const DType stored = k_cache.dtype();
  SGL_CHECK((stored == q.dtype() || is_fp8_kv(stored)) && v_cache.dtype() == stored &&
            out.dtype() == q.dtype())
      << "reference_attention: q " << dtype_name(q.dtype()) << ", cache " << dtype_name(stored);
  const auto native = backend::cuda::native_stream(stream);
  SGL_DISPATCH_FLOAT(q.dtype(), T, {
    if (stored == DType::kF8E4M3) {
      reference_attention_kernel<T, KvFormat::kE4M3><<<grid, 32, 0, native>>>(p);
    } else if (stored == DType::kF8E5M2) {
      reference_attention_kernel<T, KvFormat::kE5M2><<<grid, 32, 0, native>>>(p);
    } else {
      reference_attention_kernel<T, KvFormat::kBF16><<<grid, 32, 0, native>>>(p);
    }
  });
  SGL_CUDA_CHECK_LAUNCH();
}

}  // namespace sgl::attention::cuda
