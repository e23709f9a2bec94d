// Launchers of the KV store into the paged cache (declared without CUDA headers), alone or
// fused with RoPE. Page size 1: token t goes to slot out_cache_loc[t].
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::attention::cuda {

// k_cache[out_cache_loc[t], h, :] = k[t, h, :] and the same for v; 16 bytes per thread when every
// row is 16-byte aligned, element by element otherwise. k, v: [T, Hk, D] row-strided;
// out_cache_loc: i32 [T]; k_cache, v_cache: [slots, Hk, D] of k's dtype.
void store_kv(const Tensor& k, const Tensor& v, const Tensor& out_cache_loc, const Tensor& k_cache,
              const Tensor& v_cache, backend::Stream stream);

// RoPE and KV store in one kernel: q rotated in place, k rotated into k_cache, v copied into
// v_cache (rows out_cache_loc[t]); k is left as it was. Needs bf16 and an f32 cos_sin table
// [max_pos, D] (cos | sin halves), arguments already checked by kernels::check_rope_args;
// returns false, having queued nothing, when these dtypes or layouts do not fit.
// q: [T, Hq, D], k, v: [T, Hk, D] (rows strided, last dim contiguous); positions: i32 [T].
bool rope_store_kv(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                   const Tensor& cos_sin, const Tensor& out_cache_loc, const Tensor& k_cache,
                   const Tensor& v_cache, backend::Stream stream);

}  // namespace sgl::attention::cuda
