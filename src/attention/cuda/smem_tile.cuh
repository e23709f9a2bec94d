// Shared-memory tiles of bf16 rows for the flash attention kernels: the swizzled layout, the
// paged KV gather (through kv_indices) and the ldmatrix addresses of the MMA fragments.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "attention/cuda/mma_bf16.cuh"

namespace sgl::attention::cuda {

using bf16 = __nv_bfloat16;

// A tile of rows of kDim bf16, stored as 16-byte chunks; chunk c of row r sits at chunk
// position c ^ (r % 8), so the 8 row addresses of one ldmatrix matrix (same chunk, 8
// consecutive rows) fall in 8 different bank groups.
template <int kDim>
struct SwizzledRows {
  static constexpr int kChunks = kDim / 8;  // 16-byte chunks per row
  static constexpr int kRowBytes = kDim * 2;
  static_assert(kChunks % 8 == 0, "the swizzle needs head_dim to be a multiple of 64");

  __device__ static uint32_t offset(int row, int chunk) {
    return static_cast<uint32_t>(row * kRowBytes + ((chunk ^ (row & 7)) << 4));
  }
  // Address lane `lane` gives ldmatrix_x4 for the A fragment of rows row0..row0+15, cols
  // 16 * kstep..+15 (also the transposed B fragment of V: rows = tokens, cols = dims).
  __device__ static uint32_t a_fragment(uint32_t tile, int row0, int kstep, int lane) {
    return tile + offset(row0 + (lane & 15), 2 * kstep + (lane >> 4));
  }
  // Address for ldmatrix_x4 of the B fragments of K^T for tokens row0..row0+15 (two n8
  // blocks: registers 0-1 and 2-3), dims 16 * kstep..+15.
  __device__ static uint32_t b_fragment(uint32_t tile, int row0, int kstep, int lane) {
    return tile + offset(row0 + (lane & 7) + ((lane >> 4) << 3), 2 * kstep + ((lane >> 3) & 1));
  }
};

// The paged KV gather of a tile of kRows positions, in two steps so a kernel can fetch the
// slots (a dependent global load) a tile ahead of the copies that need them:
//   fetch(slots, first, end)   this thread's slots of positions [first, first + kRows)
//   copy(k_tile, v_tile, ...)  cp.async of those positions' K and V rows into the tiles (kv head
//                              `kv_head`); positions at or past `end` are zero-filled, so
//                              masked-out columns never feed NaN garbage into P @ V.
// k_cache, v_cache: [slots, kv_heads, kDim]; slots: the request's kv_indices (one per position).
template <int kDim, int kRows, int kThreads>
struct KvTileGather {
  using Tile = SwizzledRows<kDim>;
  static constexpr int kTotal = kRows * Tile::kChunks;
  static_assert(kTotal % kThreads == 0 && kThreads % Tile::kChunks == 0);
  static constexpr int kPerThread = kTotal / kThreads;  // rows this thread copies a chunk of

  int32_t slot[kPerThread];  // -1: past the end

  __device__ static int row_of(int i) {
    return static_cast<int>(threadIdx.x) / Tile::kChunks + i * (kThreads / Tile::kChunks);
  }
  __device__ void fetch(const int32_t* slots, int first, int end) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int pos = first + row_of(i);
      slot[i] = pos < end ? slots[pos] : -1;
    }
  }
  __device__ void copy(uint32_t k_tile, uint32_t v_tile, const bf16* k_cache, const bf16* v_cache,
                       int kv_head, int kv_heads) const {
    const int chunk = threadIdx.x % Tile::kChunks;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const bool valid = slot[i] >= 0;
      const int64_t element =
          valid ? (static_cast<int64_t>(slot[i]) * kv_heads + kv_head) * kDim + chunk * 8 : 0;
      const uint32_t off = Tile::offset(row_of(i), chunk);
      cp_async_16(k_tile + off, k_cache + element, valid);
      cp_async_16(v_tile + off, v_cache + element, valid);
    }
  }
};

// Both steps at once: KV positions [first, first + kRows) of one request into the K and V tiles.
template <int kDim, int kRows, int kThreads>
__device__ __forceinline__ void load_kv_tile(uint32_t k_tile, uint32_t v_tile, const bf16* k_cache,
                                             const bf16* v_cache, const int32_t* slots, int first,
                                             int end, int kv_head, int kv_heads) {
  KvTileGather<kDim, kRows, kThreads> gather;
  gather.fetch(slots, first, end);
  gather.copy(k_tile, v_tile, k_cache, v_cache, kv_head, kv_heads);
}

}  // namespace sgl::attention::cuda
