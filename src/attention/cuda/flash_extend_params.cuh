// What the two extend kernels share (flash_extend.cu's for every head_dim, flash_extend_hopper.cu's
// for head_dim 128 on sm_90a): their parameters, the walk from a CTA to its q tile, and the
// Hopper kernel's entry points, which flash_extend.cu calls.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace sgl::attention::cuda {

struct ExtendParams {
  const __nv_bfloat16* q;  // [T, q_heads, dim], rows strided
  int64_t q_token_stride;
  int64_t q_head_stride;
  const __nv_bfloat16* k_cache;  // [slots, kv_heads, dim]
  const __nv_bfloat16* v_cache;  // [slots, kv_heads, dim]
  __nv_bfloat16* out;            // [T, q_heads * dim]
  const int32_t* qo_indptr;      // [bs + 1]
  const int32_t* prefix_lens;    // [bs]
  const int32_t* kv_indptr;      // [bs + 1]
  const int32_t* kv_indices;     // [sum(seq_lens)]
  // [T] or null: a tree verify's rows (ForwardBatch::tree_mask; <= 64 new tokens a request).
  const uint64_t* tree_mask;
  int batch_size;
  int q_heads;
  int kv_heads;
  int group;  // q heads per KV head
  float scale_log2;
};

// Q tiles are numbered request by request (ceil(new tokens * group / rows) each). Run by one
// warp: finds the request owning tile `tile` and which of its tiles it is, latest (longest
// KV) first so the heavy causal tiles start early; request -1 past the last tile.
__device__ inline void locate_q_tile(const ExtendParams& p, int tile, int rows_per_tile, int lane,
                                     int* owner) {
  int before = 0;
  for (int b0 = 0; b0 < p.batch_size; b0 += 32) {
    const int b = b0 + lane;
    const int n =
        b < p.batch_size
            ? ((p.qo_indptr[b + 1] - p.qo_indptr[b]) * p.group + rows_per_tile - 1) / rows_per_tile
            : 0;
    int inclusive = n;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int x = __shfl_up_sync(0xffffffffu, inclusive, d);
      if (lane >= d) inclusive += x;
    }
    const int total = __shfl_sync(0xffffffffu, inclusive, 31);
    if (tile < before + total) {
      const unsigned hit = __ballot_sync(0xffffffffu, tile < before + inclusive);
      if (lane == __ffs(hit) - 1) {
        owner[0] = b;
        owner[1] = n - 1 - (tile - (before + inclusive - n));
      }
      return;
    }
    before += total;
  }
  if (lane == 0) owner[0] = -1;
}

// The Hopper kernel (flash_extend_hopper.cu): head_dim 128, no tree mask. Launches one CTA per
// 128 packed rows of a request and KV head.
void launch_flash_extend_hopper(const ExtendParams& p, int num_tokens, cudaStream_t stream);
// Whether the current device runs it (compute capability 9.0: the kernel is built for sm_90a
// only); raises its shared-memory limit there.
bool configure_flash_extend_hopper();

}  // namespace sgl::attention::cuda
