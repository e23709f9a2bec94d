// Online softmax (FlashAttention-2 style) on mma C fragments: each thread holds two rows
// (g = lane / 4 and g + 8), and the 4 lanes of a quad together hold a row's columns.
#pragma once

#include <cmath>

#include "attention/cuda/mma_bf16.cuh"

namespace sgl::attention::cuda {

// Scores are scaled by scale * kLog2e so the softmax can use exp2.
constexpr float kLog2e = 1.4426950408889634f;

// Running state of a thread's two rows, in log2 units (scores pre-multiplied by
// scale * log2(e)). row_sum is this lane's share of the row; quad_row_sums completes it.
struct SoftmaxRows {
  float max[2] = {-INFINITY, -INFINITY};
  float sum[2] = {0.f, 0.f};
};

// Folds one tile of scores into the state: s (scores, -inf where masked) becomes p =
// 2^(s - new max), and the output accumulator o is rescaled to the new max.
// s: C fragments [kSBlocks n8 blocks][4]; o: C fragments [kOBlocks n8 blocks][4].
template <int kSBlocks, int kOBlocks>
__device__ __forceinline__ void online_softmax_update(float (&s)[kSBlocks][4],
                                                      float (&o)[kOBlocks][4], SoftmaxRows& rows) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float tile_max = rows.max[r];
#pragma unroll
    for (int j = 0; j < kSBlocks; ++j)
      tile_max = fmaxf(tile_max, fmaxf(s[j][2 * r], s[j][2 * r + 1]));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
    // NOTE: a row with nothing unmasked yet keeps max -inf; subtract 0 then, not -inf - -inf.
    const float base = tile_max == -INFINITY ? 0.f : tile_max;
    const float correction = fast_exp2(rows.max[r] - base);
    rows.max[r] = tile_max;
    float tile_sum = 0.f;
#pragma unroll
    for (int j = 0; j < kSBlocks; ++j) {
      s[j][2 * r] = fast_exp2(s[j][2 * r] - base);
      s[j][2 * r + 1] = fast_exp2(s[j][2 * r + 1] - base);
      tile_sum += s[j][2 * r] + s[j][2 * r + 1];
    }
    rows.sum[r] = rows.sum[r] * correction + tile_sum;
#pragma unroll
    for (int j = 0; j < kOBlocks; ++j) {
      o[j][2 * r] *= correction;
      o[j][2 * r + 1] *= correction;
    }
  }
}

// Scores of one tile into log2 units: s *= scale, and -inf where shown(column, r) is false for
// the thread's row r (0: g, 1: g + 8); col: the column of its value s[0][0].
template <int kSBlocks, typename Shown>
__device__ __forceinline__ void mask_and_scale(float (&s)[kSBlocks][4], int col, float scale,
                                               Shown shown) {
#pragma unroll
  for (int j = 0; j < kSBlocks; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      s[j][e] = shown(col + 8 * j + (e & 1), e >> 1) ? s[j][e] * scale : -INFINITY;
    }
  }
}
template <int kSBlocks>
__device__ __forceinline__ void scale_scores(float (&s)[kSBlocks][4], float scale) {
#pragma unroll
  for (int j = 0; j < kSBlocks; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) s[j][e] *= scale;
  }
}

// o's rows divided by their sums (quad_row_sums done), as bf16 to the thread's share of each
// output row: dst[r] (row r's out row, or null when the row is padding), columns 8 j + 2 (lane
// % 4) and + 1.
template <int kOBlocks>
__device__ __forceinline__ void store_rows(const float (&o)[kOBlocks][4], const SoftmaxRows& rows,
                                           __nv_bfloat16* const (&dst)[2], int lane) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (dst[r] == nullptr) continue;
    const float inv = 1.f / rows.sum[r];
#pragma unroll
    for (int j = 0; j < kOBlocks; ++j) {
      *reinterpret_cast<uint32_t*>(dst[r] + 8 * j + 2 * (lane % 4)) =
          pack_bf16x2(o[j][2 * r] * inv, o[j][2 * r + 1] * inv);
    }
  }
}

// Sums each row's share over the quad, so every lane holds its two rows' full sums.
__device__ __forceinline__ void quad_row_sums(SoftmaxRows& rows) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    rows.sum[r] += __shfl_xor_sync(0xffffffffu, rows.sum[r], 1);
    rows.sum[r] += __shfl_xor_sync(0xffffffffu, rows.sum[r], 2);
  }
}

// P (probabilities of 16 columns: C blocks 2k and 2k + 1) as the A fragment of P @ V.
template <int kSBlocks>
__device__ __forceinline__ void p_fragment(const float (&p)[kSBlocks][4], int kstep,
                                           uint32_t (&a)[4]) {
  a[0] = pack_bf16x2(p[2 * kstep][0], p[2 * kstep][1]);
  a[1] = pack_bf16x2(p[2 * kstep][2], p[2 * kstep][3]);
  a[2] = pack_bf16x2(p[2 * kstep + 1][0], p[2 * kstep + 1][1]);
  a[3] = pack_bf16x2(p[2 * kstep + 1][2], p[2 * kstep + 1][3]);
}

}  // namespace sgl::attention::cuda
