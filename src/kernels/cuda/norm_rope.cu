// CUDA RMSNorm (plain and fused residual add) and rotate-half RoPE. Kernels are launched
// programmatically (common/pdl.cuh): each waits for the previous kernel before touching
// activations.
#include <algorithm>
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "core/alignment.h"
#include "kernels/cuda/common/add_rms_norm_row.cuh"
#include "kernels/cuda/common/block_reduce.cuh"
#include "kernels/cuda/common/cuda_types.cuh"
#include "kernels/cuda/common/dispatch.cuh"
#include "kernels/cuda/common/pdl.cuh"
#include "kernels/cuda/common/rotate_half.cuh"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/row_layout.h"

namespace sgl::kernels::cuda {
namespace {

constexpr int kNormThreads = 256;

// One block per row. `residual` (nullable; f32 or the activation dtype) gets x + residual, and
// the norm runs over it.
template <typename T, typename R = T>
__global__ void rms_norm_kernel(const T* x, RowLayout x_rows, T* out, RowLayout out_rows,
                                R* residual, const T* weight, float eps) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t row = blockIdx.x;
  const int64_t n = x_rows.row_len;
  const T* xr = x + x_rows.offset(row);
  T* orow = out + out_rows.offset(row);
  R* rr = residual ? residual + row * n : nullptr;
  float sum_sq = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float v = to_float(xr[i]);
    if (rr) {
      v += to_float(rr[i]);
      rr[i] = from_float<R>(v);
    }
    sum_sq += v * v;
  }
  const float inv = rsqrtf(block_sum(sum_sq) / static_cast<float>(n) + eps);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = rr ? to_float(rr[i]) : to_float(xr[i]);
    // As transformers: normalize in f32, round to the activation dtype, then scale.
    const float normed = to_float(from_float<T>(v * inv));
    orow[i] = from_float<T>(to_float(weight[i]) * normed);
  }
}

// kPerLane values of T moved as one access.
template <typename T, int kPerLane>
struct alignas(sizeof(T) * kPerLane) Pack {
  T v[kPerLane];
};

// qk_rms_norm: one warp per head row, q's rows first, then k's; kPerLane values per lane
// (D <= 32 * kPerLane). kPacked (D == 32 * kPerLane, rows and weights aligned to a Pack): lane
// l holds elements [l kPerLane, (l + 1) kPerLane), moved as one access; else l + 32 j, one
// element at a time. Arithmetic as rms_norm_kernel's; the packed rows' order is also
// HeadRmsNorm's (head_rms_norm.cuh), which folds this norm into RoPE with the same bits.
template <typename T, int kPerLane, bool kPacked>
__global__ void qk_rms_norm_kernel(T* q, RowLayout q_rows, T* k, RowLayout k_rows,
                                   const T* q_weight, const T* k_weight, float eps) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= q_rows.num_rows + k_rows.num_rows) return;  // the whole warp
  const bool is_q = row < q_rows.num_rows;
  T* x = is_q ? q + q_rows.offset(row) : k + k_rows.offset(row - q_rows.num_rows);
  const T* weight = is_q ? q_weight : k_weight;
  const int n = static_cast<int>(q_rows.row_len);
  using P = Pack<T, kPerLane>;
  float v[kPerLane];
  float sum_sq = 0.f;
  if constexpr (kPacked) {
    const P p = reinterpret_cast<const P*>(x)[lane];
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) v[j] = to_float(p.v[j]);
  } else {
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int i = lane + 32 * j;
      v[j] = i < n ? to_float(x[i]) : 0.f;
    }
  }
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) sum_sq = __fmaf_rn(v[j], v[j], sum_sq);
  const float inv = rsqrtf(warp_sum_of(sum_sq) / static_cast<float>(n) + eps);
  if constexpr (kPacked) {
    const P w = reinterpret_cast<const P*>(weight)[lane];
    P out;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      out.v[j] = from_float<T>(to_float(w.v[j]) * to_float(from_float<T>(v[j] * inv)));
    }
    reinterpret_cast<P*>(x)[lane] = out;
  } else {
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int i = lane + 32 * j;
      if (i < n) x[i] = from_float<T>(to_float(weight[i]) * to_float(from_float<T>(v[j] * inv)));
    }
  }
}

// Whether every row of `rows` over `base`, and `weight`, start at multiples of `per_pack`
// elements of `bytes` each, from Pack-aligned addresses.
bool rows_packable(const void* base, const RowLayout& rows, const void* weight, int per_pack,
                   int bytes) {
  for (int d = 0; d < rows.lead_dims; ++d) {
    if (rows.strides[d] % per_pack != 0) return false;
  }
  return is_aligned(base, static_cast<size_t>(per_pack * bytes)) &&
         is_aligned(weight, static_cast<size_t>(per_pack * bytes));
}

// Rows (and row widths) up to which the fused add + RMSNorm launches the kernel after it (a
// linear layer's GEMV) before its own wait: that GEMV's blocks are then placed, with their first
// weight loads in flight, while the kernel before the norm (a projection) ends. One row of up
// to 2048 values made steps faster at every shape and context measured; more rows gained at
// most shapes too but lost at some where decode runs about 112-128 wide CTAs (not understood),
// and 4096-wide single rows gained little and are left out with them
// (docs/perf-log/2026-12-01-early-projection.md). The GEMV reads only weights before its wait;
// pdl.cuh lists this exception.
constexpr int64_t kAddRmsNormEarlyLaunchMaxRows = 1;
constexpr int64_t kAddRmsNormEarlyLaunchMaxWidth = 2048;

// The decode-sized case of the fused residual add + RMSNorm: bf16 x, f32 residual, rows of
// n % 8 == 0 held in registers (kChunks x 8 values per thread), one pass over memory with
// 16-byte accesses. One block per row (add_rms_norm_row.cuh's, which the custom all-reduce's
// fused kernel shares); the bound keeps kChunks = 4 launchable at 1024 threads.
template <int kChunks>
__global__ void __launch_bounds__(kAddRmsNormMaxThreads)
    add_rms_norm_vec_kernel(__nv_bfloat16* x, float* residual, const __nv_bfloat16* weight, int n,
                            float eps, bool launch_early) {
  const int64_t row = blockIdx.x;
  uint4* xr = reinterpret_cast<uint4*>(x + row * n);
  float4* rr = reinterpret_cast<float4*>(residual + row * n);
  const uint4* wr = reinterpret_cast<const uint4*>(weight);
  const int chunks = n / 8;
  uint4 w[kChunks];
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int i = threadIdx.x + c * blockDim.x;
    if (i < chunks) w[c] = wr[i];  // weights: constant, safe before the wait
  }
  if (launch_early) pdl_launch_dependents();  // (kAddRmsNormEarlyLaunchMaxRows)
  pdl_wait();
  float v[kChunks][8];
  float sum_sq = 0.f;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int i = threadIdx.x + c * blockDim.x;
    if (i < chunks) add_chunk_into_residual(xr[i], rr + 2 * i, v[c], sum_sq);
  }
  if (!launch_early) pdl_launch_dependents();
  const float inv = rsqrtf(block_sum(sum_sq) / static_cast<float>(n) + eps);
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int i = threadIdx.x + c * blockDim.x;
    if (i < chunks) xr[i] = normed_chunk(v[c], inv, w[c]);
  }
}

// One block per (token, head): thread i rotates the pair (i, i + head_dim / 2).
template <typename T>
__global__ void rope_kernel(T* q, int64_t q_tok_stride, int64_t q_head_stride, int q_heads, T* k,
                            int64_t k_tok_stride, int64_t k_head_stride, const int32_t* positions,
                            const float* cos_sin, int head_dim) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t t = blockIdx.x;
  const int head = blockIdx.y, half = head_dim / 2, i = threadIdx.x;
  if (i >= half) return;
  T* v = head < q_heads ? q + t * q_tok_stride + head * q_head_stride
                        : k + t * k_tok_stride + (head - q_heads) * k_head_stride;
  rotate_half_pair(v, v, cos_sin + static_cast<int64_t>(positions[t]) * head_dim, i, half);
}

// Runs the vectorized add + norm when the layout allows; false otherwise.
bool try_add_rms_norm_vec(const Tensor& x, const Tensor& residual, const Tensor& weight, double eps,
                          cudaStream_t stream) {
  const int64_t n = x.size(1), chunks = n / 8;
  if (x.dtype() != DType::kBF16 || residual.dtype() != DType::kF32 || n % 8 != 0 ||
      chunks > kAddRmsNormMaxChunksPerThread * kAddRmsNormMaxThreads || !is_aligned(x.raw(), 16) ||
      !is_aligned(residual.raw(), 16) || !is_aligned(weight.raw(), 16)) {
    return false;
  }
  auto* xp = static_cast<__nv_bfloat16*>(x.raw());
  auto* rp = static_cast<float*>(residual.raw());
  const auto* wp = static_cast<const __nv_bfloat16*>(weight.raw());
  const dim3 grid(static_cast<unsigned>(x.size(0)));
  const int ni = static_cast<int>(n);
  const float e = static_cast<float>(eps);
  const bool early =
      x.size(0) <= kAddRmsNormEarlyLaunchMaxRows && n <= kAddRmsNormEarlyLaunchMaxWidth;
  with_add_rms_norm_chunks(chunks, [&](auto per_thread, int threads) {
    launch_pdl(add_rms_norm_vec_kernel<decltype(per_thread)::value>, grid, threads, 0, stream, xp,
               rp, wp, ni, e, early);
  });
  return true;
}

}  // namespace

void rms_norm(const Tensor& x, const Tensor& weight, double eps, const Tensor& out,
              backend::Stream stream) {
  const RowLayout in_rows = row_layout(x), out_rows = row_layout(out);
  if (in_rows.num_rows == 0) return;
  SGL_DISPATCH_FLOAT(x.dtype(), T, {
    launch_pdl(rms_norm_kernel<T, T>, dim3(in_rows.num_rows), kNormThreads, 0,
               backend::cuda::native_stream(stream), static_cast<const T*>(x.raw()), in_rows,
               static_cast<T*>(out.raw()), out_rows, static_cast<T*>(nullptr),
               static_cast<const T*>(weight.raw()), static_cast<float>(eps));
  });
}

void qk_rms_norm(const Tensor& q, const Tensor& k, const Tensor& q_weight, const Tensor& k_weight,
                 double eps, backend::Stream stream) {
  const RowLayout q_rows = row_layout(q), k_rows = row_layout(k);
  const int64_t rows = q_rows.num_rows + k_rows.num_rows;
  if (rows == 0) return;
  constexpr int kWarps = 8;
  const dim3 grid(static_cast<unsigned>((rows + kWarps - 1) / kWarps));
  const auto s = backend::cuda::native_stream(stream);
  const int64_t d = q_rows.row_len;
  SGL_DISPATCH_FLOAT(q.dtype(), T, {
    auto run = [&](auto kernel) {
      launch_pdl(kernel, grid, 32 * kWarps, 0, s, static_cast<T*>(q.raw()), q_rows,
                 static_cast<T*>(k.raw()), k_rows, static_cast<const T*>(q_weight.raw()),
                 static_cast<const T*>(k_weight.raw()), static_cast<float>(eps));
    };
    auto packable = [&](int per_lane) {
      return d == 32 * per_lane &&
             rows_packable(q.raw(), q_rows, q_weight.raw(), per_lane, sizeof(T)) &&
             rows_packable(k.raw(), k_rows, k_weight.raw(), per_lane, sizeof(T));
    };
    if (packable(2)) {
      run(qk_rms_norm_kernel<T, 2, true>);
    } else if (packable(4)) {
      run(qk_rms_norm_kernel<T, 4, true>);
    } else if (d <= 64) {
      run(qk_rms_norm_kernel<T, 2, false>);
    } else if (d <= 128) {
      run(qk_rms_norm_kernel<T, 4, false>);
    } else if (d <= 256) {
      run(qk_rms_norm_kernel<T, 8, false>);
    } else {
      // Longer heads: the block-per-row kernel, twice.
      rms_norm(q, q_weight, eps, q, stream);
      rms_norm(k, k_weight, eps, k, stream);
    }
  });
}

void fused_add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor& weight, double eps,
                        backend::Stream stream) {
  const RowLayout rows = row_layout(x);
  if (rows.num_rows == 0) return;
  if (try_add_rms_norm_vec(x, residual, weight, eps, backend::cuda::native_stream(stream))) return;
  const dim3 grid(rows.num_rows);
  SGL_DISPATCH_FLOAT(x.dtype(), T, {
    if (residual.dtype() == DType::kF32) {
      launch_pdl(rms_norm_kernel<T, float>, grid, kNormThreads, 0,
                 backend::cuda::native_stream(stream), static_cast<const T*>(x.raw()), rows,
                 static_cast<T*>(x.raw()), rows, static_cast<float*>(residual.raw()),
                 static_cast<const T*>(weight.raw()), static_cast<float>(eps));
    } else {
      launch_pdl(rms_norm_kernel<T, T>, grid, kNormThreads, 0, backend::cuda::native_stream(stream),
                 static_cast<const T*>(x.raw()), rows, static_cast<T*>(x.raw()), rows,
                 static_cast<T*>(residual.raw()), static_cast<const T*>(weight.raw()),
                 static_cast<float>(eps));
    }
  });
}

void rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& cos_sin,
          backend::Stream stream) {
  if (q.size(0) == 0) return;
  const int half = static_cast<int>(q.size(2) / 2);
  const dim3 grid(static_cast<unsigned>(q.size(0)), static_cast<unsigned>(q.size(1) + k.size(1)));
  const int threads = (half + 31) / 32 * 32;
  SGL_DISPATCH_FLOAT(q.dtype(), T, {
    launch_pdl(rope_kernel<T>, grid, threads, 0, backend::cuda::native_stream(stream),
               static_cast<T*>(q.raw()), q.stride(0), q.stride(1), static_cast<int>(q.size(1)),
               static_cast<T*>(k.raw()), k.stride(0), k.stride(1), positions.data<int32_t>(),
               cos_sin.data<float>(), static_cast<int>(q.size(2)));
  });
}

}  // namespace sgl::kernels::cuda
