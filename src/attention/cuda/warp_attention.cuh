// One warp's share of a flash attention tile: 16 * kMTiles query rows against tokens of the
// shared-memory K and V tiles, S = Q K^T and O += P V on bf16 tensor cores with f32
// accumulators. More row tiles per warp reuse each K / V fragment read from shared memory.
#pragma once

#include <cstdint>

#include "attention/cuda/mma_bf16.cuh"
#include "attention/cuda/online_softmax.cuh"
#include "attention/cuda/smem_tile.cuh"

namespace sgl::attention::cuda {

// The A fragments of a warp's 16 * kMTiles query rows [rows, kDim]: kept in registers (when
// they fit) or re-read from the shared Q tile at each use.
template <int kDim, int kMTiles, bool kInRegisters>
struct QFragments {
  using Tile = SwizzledRows<kDim>;
  uint32_t tile = 0;
  int row0 = 0;
  int lane = 0;
  uint32_t regs[kInRegisters ? kMTiles : 1][kInRegisters ? kDim / 16 : 1][4];

  // q_tile: a swizzled [rows, kDim] tile already in shared memory; the warp's rows start at
  // first_row.
  __device__ void init(uint32_t q_tile, int first_row, int lane_id) {
    tile = q_tile;
    row0 = first_row;
    lane = lane_id;
    if constexpr (kInRegisters) {
#pragma unroll
      for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
        for (int ks = 0; ks < kDim / 16; ++ks) {
          ldmatrix_x4(regs[m][ks], Tile::a_fragment(tile, row0 + 16 * m, ks, lane));
        }
      }
    }
  }
  __device__ void get(int m, int kstep, uint32_t (&a)[4]) const {
    if constexpr (kInRegisters) {
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = regs[m][kstep][i];
    } else {
      ldmatrix_x4(a, Tile::a_fragment(tile, row0 + 16 * m, kstep, lane));
    }
  }
};

// s = Q K^T for the warp's rows and tokens tok0..tok0 + 8 * kSBlocks - 1 of the K tile.
// s: C fragments [kMTiles][kSBlocks][4] (overwritten); k_tile: swizzled [tokens, kDim].
template <int kDim, int kMTiles, int kSBlocks, typename Q>
__device__ __forceinline__ void warp_scores(float (&s)[kMTiles][kSBlocks][4], const Q& q,
                                            uint32_t k_tile, int tok0, int lane) {
  static_assert(kSBlocks % 2 == 0);
  using Tile = SwizzledRows<kDim>;
#pragma unroll
  for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
    for (int j = 0; j < kSBlocks; ++j) s[m][j][0] = s[m][j][1] = s[m][j][2] = s[m][j][3] = 0.f;
  }
#pragma unroll
  for (int ks = 0; ks < kDim / 16; ++ks) {
    uint32_t a[kMTiles][4];
#pragma unroll
    for (int m = 0; m < kMTiles; ++m) q.get(m, ks, a[m]);
#pragma unroll
    for (int jp = 0; jp < kSBlocks / 2; ++jp) {
      uint32_t b[4];
      ldmatrix_x4(b, Tile::b_fragment(k_tile, tok0 + 16 * jp, ks, lane));
#pragma unroll
      for (int m = 0; m < kMTiles; ++m) {
        mma_bf16_16816(s[m][2 * jp], a[m], b[0], b[1]);
        mma_bf16_16816(s[m][2 * jp + 1], a[m], b[2], b[3]);
      }
    }
  }
}

// o += P V for the warp's rows; p holds probabilities of tokens tok0..tok0 + 8 * kSBlocks - 1
// of the V tile. o: C fragments [kMTiles][kDim / 8][4]; v_tile: swizzled [tokens, kDim].
template <int kDim, int kMTiles, int kSBlocks>
__device__ __forceinline__ void warp_accumulate_pv(float (&o)[kMTiles][kDim / 8][4],
                                                   const float (&p)[kMTiles][kSBlocks][4],
                                                   uint32_t v_tile, int tok0, int lane) {
  using Tile = SwizzledRows<kDim>;
#pragma unroll
  for (int kk = 0; kk < kSBlocks / 2; ++kk) {
    uint32_t a[kMTiles][4];
#pragma unroll
    for (int m = 0; m < kMTiles; ++m) p_fragment(p[m], kk, a[m]);
#pragma unroll
    for (int nd = 0; nd < kDim / 16; ++nd) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, Tile::a_fragment(v_tile, tok0 + 16 * kk, nd, lane));
#pragma unroll
      for (int m = 0; m < kMTiles; ++m) {
        mma_bf16_16816(o[m][2 * nd], a[m], b[0], b[1]);
        mma_bf16_16816(o[m][2 * nd + 1], a[m], b[2], b[3]);
      }
    }
  }
}

}  // namespace sgl::attention::cuda
