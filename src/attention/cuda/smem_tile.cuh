// Shared-memory tiles of bf16 rows for the flash attention kernels: the swizzled layout, the
// paged KV gather (through kv_indices) and the ldmatrix addresses of the MMA fragments.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "attention/cuda/kv_format.cuh"
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
//   copy(k_dst, v_dst, ...)    cp.async of those positions' K and V rows (kv head `kv_head`);
//                              positions at or past `end` are zero-filled, so masked-out
//                              columns never feed NaN garbage into P @ V.
// bf16 caches land in the swizzled tiles the MMAs read. FP8 caches (kv_format.cuh) land in
// staging tiles of kRows x kDim codes (kStagingBytes each), 16 codes a copy; once this thread's
// copies arrived (cp_async_wait), widen() turns the same pieces into the bf16 tiles. Each thread
// only widens what it copied itself, so no barrier separates the two.
// k_cache, v_cache: [slots, kv_heads, kDim] of the format's elements; slots: the request's
// kv_indices (one per position).
template <int kDim, int kRows, int kThreads, KvFormat kFormat = KvFormat::kBF16>
struct KvTileGather {
  using Tile = SwizzledRows<kDim>;
  // 16-byte pieces a row is copied in: 8 bf16 values (a tile chunk), or 16 FP8 codes (two).
  static constexpr int kPieceValues = kIsFp8<kFormat> ? 16 : 8;
  static constexpr int kPieces = kDim / kPieceValues;
  static constexpr int kTotal = kRows * kPieces;
  static_assert(kTotal % kThreads == 0 && kThreads % kPieces == 0);
  static constexpr int kPerThread = kTotal / kThreads;  // rows this thread copies a piece of
  static constexpr int kStagingBytes = kIsFp8<kFormat> ? kRows * kDim : 0;

  int32_t slot[kPerThread];  // -1: past the end

  __device__ static int row_of(int i) {
    return static_cast<int>(threadIdx.x) / kPieces + i * (kThreads / kPieces);
  }
  __device__ static int piece() { return static_cast<int>(threadIdx.x) % kPieces; }
  // Where an FP8 row's piece is staged: rows of kDim bytes, unswizzled.
  __device__ static uint32_t staging_offset(int row, int piece) {
    return static_cast<uint32_t>(row * kDim + piece * 16);
  }
  __device__ void fetch(const int32_t* slots, int first, int end) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int pos = first + row_of(i);
      slot[i] = pos < end ? slots[pos] : -1;
    }
  }
  // k_dst, v_dst: the bf16 tiles, or for FP8 the staging tiles.
  __device__ void copy(uint32_t k_dst, uint32_t v_dst, const void* k_cache, const void* v_cache,
                       int kv_head, int kv_heads) const {
    const auto* k_bytes = static_cast<const uint8_t*>(k_cache);
    const auto* v_bytes = static_cast<const uint8_t*>(v_cache);
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const bool valid = slot[i] >= 0;
      const int64_t element = valid ? (static_cast<int64_t>(slot[i]) * kv_heads + kv_head) * kDim +
                                          piece() * kPieceValues
                                    : 0;
      const int64_t byte = element * kKvElementBytes<kFormat>;
      const uint32_t off =
          kIsFp8<kFormat> ? staging_offset(row_of(i), piece()) : Tile::offset(row_of(i), piece());
      cp_async_16(k_dst + off, k_bytes + byte, valid);
      cp_async_16(v_dst + off, v_bytes + byte, valid);
    }
  }
  // FP8: this thread's staged pieces as scaled bf16 into the swizzled K and V tiles (chunks
  // 2 piece and 2 piece + 1 of each row).
  __device__ static void widen(uint32_t k_staging, uint32_t v_staging, uint32_t k_tile,
                               uint32_t v_tile, float k_scale, float v_scale) {
    if constexpr (kIsFp8<kFormat>) {
#pragma unroll
      for (int i = 0; i < kPerThread; ++i) {
        const int row = row_of(i);
        const uint32_t from = staging_offset(row, piece());
        const uint32_t lo = Tile::offset(row, 2 * piece()), hi = Tile::offset(row, 2 * piece() + 1);
        const uint4 k = ld_shared_16(k_staging + from), v = ld_shared_16(v_staging + from);
        st_shared_16(k_tile + lo, widen_fp8x8<kFormat>(make_uint2(k.x, k.y), k_scale));
        st_shared_16(k_tile + hi, widen_fp8x8<kFormat>(make_uint2(k.z, k.w), k_scale));
        st_shared_16(v_tile + lo, widen_fp8x8<kFormat>(make_uint2(v.x, v.y), v_scale));
        st_shared_16(v_tile + hi, widen_fp8x8<kFormat>(make_uint2(v.z, v.w), v_scale));
      }
    }
  }
};

// Both steps at once: KV positions [first, first + kRows) of one request into the K and V tiles
// (for FP8, their staging tiles).
template <int kDim, int kRows, int kThreads, KvFormat kFormat = KvFormat::kBF16>
__device__ __forceinline__ void load_kv_tile(uint32_t k_dst, uint32_t v_dst, const void* k_cache,
                                             const void* v_cache, const int32_t* slots, int first,
                                             int end, int kv_head, int kv_heads) {
  KvTileGather<kDim, kRows, kThreads, kFormat> gather;
  gather.fetch(slots, first, end);
  gather.copy(k_dst, v_dst, k_cache, v_cache, kv_head, kv_heads);
}

}  // namespace sgl::attention::cuda
