// What the two extend kernels share (flash_extend.cu's for every head_dim, flash_extend_hopper.cu's
// for head_dim 128 on sm_90a): their parameters with the q and out row of a packed (token, q
// head) row, the walk from a CTA to its q tile and that tile's rows and KV, and the Hopper
// kernel's entry points, which flash_extend.cu calls. (The score masking and the output stores
// they share are in online_softmax.cuh.)
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace sgl::attention::cuda {

struct ExtendParams {
  const __nv_bfloat16* q;  // [T, q_heads, dim], rows strided
  int64_t q_token_stride;
  int64_t q_head_stride;
  const void* k_cache;  // [slots, kv_heads, dim]: bf16, or FP8 codes (the mma.sync kernel only)
  const void* v_cache;  // [slots, kv_heads, dim]
  float k_scale;        // FP8: a code reads as float(code) * scale
  float v_scale;
  __nv_bfloat16* out;          // [T, q_heads * dim]
  const int32_t* qo_indptr;    // [bs + 1]
  const int32_t* prefix_lens;  // [bs]
  const int32_t* kv_indptr;    // [bs + 1]
  const int32_t* kv_indices;   // [sum(seq_lens)]
  // [T] or null: a tree verify's rows (ForwardBatch::tree_mask; <= 64 new tokens a request).
  const uint64_t* tree_mask;
  int batch_size;
  int q_heads;
  int kv_heads;
  int group;  // q heads per KV head
  float scale_log2;

  // Packed row `packed` of a request's (new token, q head) pairs of KV head `kv_head`: token
  // packed / group, q head packed % group of the head's group. Its q row and its out row.
  __device__ const __nv_bfloat16* q_row(int qo_start, int kv_head, int packed) const {
    return q + static_cast<int64_t>(qo_start + packed / group) * q_token_stride +
           (kv_head * group + packed % group) * q_head_stride;
  }
  __device__ __nv_bfloat16* out_row(int qo_start, int kv_head, int packed, int dim) const {
    const int64_t token = qo_start + packed / group;
    return out + (token * q_heads + kv_head * group + packed % group) * dim;
  }
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

// The rows a CTA takes: q tile `owner[1]` (rows_per_tile packed rows) of request owner[0]
// (locate_q_tile's answer, >= 0) and KV head `kv_head`, and the KV they see.
struct ExtendTile {
  int request, kv_head, qo_start, packed_rows, prefix, row0;
  int kv_end;     // KV positions the tile's rows see at most
  int num_tiles;  // KV tiles of tile_tokens covering them
};
__device__ inline ExtendTile extend_tile(const ExtendParams& p, const int* owner, int kv_head,
                                         int rows_per_tile, int tile_tokens) {
  ExtendTile t;
  t.request = owner[0];
  t.kv_head = kv_head;
  t.qo_start = p.qo_indptr[t.request];
  t.packed_rows = (p.qo_indptr[t.request + 1] - t.qo_start) * p.group;
  t.prefix = p.prefix_lens[t.request];
  t.row0 = owner[1] * rows_per_tile;
  const int last_row = min(t.packed_rows, t.row0 + rows_per_tile) - 1;
  t.kv_end = t.prefix + last_row / p.group + 1;
  t.num_tiles = (t.kv_end + tile_tokens - 1) / tile_tokens;
  return t;
}

// The Hopper kernel (flash_extend_hopper.cu): head_dim 128, no tree mask, a bf16 cache.
// Launches one CTA per 128 packed rows of a request and KV head.
void launch_flash_extend_hopper(const ExtendParams& p, int num_tokens, cudaStream_t stream);
// Whether the current device runs it (kernels::cuda::hopper_kernels_run: compute capability 9.0
// and an sm_90a build); raises its shared-memory limit there.
bool configure_flash_extend_hopper();

}  // namespace sgl::attention::cuda
