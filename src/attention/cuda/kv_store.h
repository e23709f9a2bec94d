// Launchers of the KV store into the paged cache (declared without CUDA headers), alone or
// fused with RoPE. Page size 1: token t goes to slot out_cache_loc[t].
#pragma once

#include "attention/kv_pool.h"
#include "attention/qk_norm.h"
#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::attention::cuda {

// cache.k[out_cache_loc[t], h, :] = k[t, h, :] and the same for v; 16 bytes per thread when every
// row is 16-byte aligned, element by element otherwise. k, v: [T, Hk, D] row-strided;
// out_cache_loc: i32 [T]; cache.k, cache.v: [slots, Hk, D] of k's dtype, or FP8 (each value
// stored as the code of value / its scale, rounded to nearest even and saturated).
void store_kv(const Tensor& k, const Tensor& v, const Tensor& out_cache_loc, const LayerKv& cache,
              backend::Stream stream);

// RoPE and KV store in one kernel: q rotated in place, k rotated into cache.k, v copied into
// cache.v (rows out_cache_loc[t]); k is left as it was. Needs bf16 (a bf16 cache too) and an f32
// cos_sin table [max_pos, D] (cos | sin halves), arguments already checked by
// kernels::check_rope_args;
// returns false, having queued nothing, when these dtypes or layouts do not fit.
// With qk_norm, q and k are first normalized per head as kernels::qk_rms_norm would (the same
// bits; q's normalized rows are what is rotated in place); false, having queued nothing, where
// that does not fit (qk_norm_fusable, or rows not of four pairs a thread).
// q: [T, Hq, D], k, v: [T, Hk, D] (rows strided, last dim contiguous); positions: i32 [T].
bool rope_store_kv(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                   const Tensor& cos_sin, const Tensor& out_cache_loc, const LayerKv& cache,
                   backend::Stream stream, const QkNorm* qk_norm = nullptr);

// Whether the RoPE kernels here and the decode kernel (flash_attention.h) fold this norm into
// their pass: bf16, head_dim 64 or 128 (the layouts HeadRmsNorm follows), bf16 [D] weights.
bool qk_norm_fusable(const Tensor& q, const QkNorm& norm);

}  // namespace sgl::attention::cuda
