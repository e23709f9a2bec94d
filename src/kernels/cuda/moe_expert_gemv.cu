// The decode path of fused_moe: the experts chosen in this step, each streamed from memory once
// however many tokens chose it, as two tensor-core GEMVs over the block-size-1 alignment:
//   gate/up:  act[p, j] = silu(gate_e[j] . x[token(p)]) * (up_e[j] . x[token(p)])
//   down:     partial[entry(p), h] = down_e[h] . act[p]
// for the sorted positions p of expert e's group. Grid (row tiles, active-expert slots): CTA
// (x, y) takes the y-th expert with tokens (the alignment's active list; CTAs past the number of
// active experts exit) and a tile of its weight rows, and loops over its tokens 8 or 16 at a
// time. Each warp covers one 16-row MMA tile over a share of k: lane (g = lane / 4, t = lane %
// 4) loads 16 bytes of rows g and g + 8 and the same 8 k values of token g, which feed
// m16n8k16 MMAs with the weight as A and the tokens as B (the k order inside a dot product does
// not matter, so A and B are permuted alike: the technique of gemv.cu, which has the details).
// Gate/up tiles hold 8 gate rows (A rows 0-7) and the matching 8 up rows (A rows 8-15), so a
// lane ends with both halves of its SiLU-and-mul in registers. The warps splitting k meet in
// shared memory.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "kernels/cuda/common/cuda_types.cuh"
#include "kernels/cuda/common/mma_m16n8k16.cuh"
#include "kernels/cuda/common/pdl.cuh"
#include "kernels/cuda/moe_kernels.h"

namespace sgl::kernels::cuda {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kStepK = 64;      // k values per warp step: 4 lanes x 2 chunks x 8 values
constexpr int kTileTokens = 8;  // tokens per MMA tile (the n of m16n8k16)

enum class Proj { kGateUp, kDown };

// 16 weight bytes, streamed past L1 (read once) with the whole 128-byte line asked of L2 (as
// gemv.cu's load_weight, which says why).
__device__ __forceinline__ uint4 load_weight(const bf16* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.L2::128B.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// kRowWarps row tiles per CTA, each split over k by kWarps / kRowWarps warps; kTokenTiles x 8
// tokens per pass over the weights; kUnroll steps of loads in flight per warp.
template <Proj kProj, int kRowWarps, int kTokenTiles, int kUnroll>
__global__ void __launch_bounds__(kThreads, 2)
    expert_gemv_kernel(const __grid_constant__ MoeExpertsArgs a) {
  constexpr int kWarpsK = kWarps / kRowWarps;
  constexpr int kChunk = kTileTokens * kTokenTiles;
  constexpr bool kGateUp = kProj == Proj::kGateUp;
  constexpr int kOutRows = kGateUp ? 8 : 16;  // outputs per row tile
  pdl_wait();
  pdl_launch_dependents();
  if (static_cast<int>(blockIdx.y) >= a.counters[1]) return;  // no expert for this slot
  const int expert = a.active[blockIdx.y];
  const int begin = a.offsets[expert], end = a.offsets[expert + 1];

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int row_tile = warp / kWarpsK, warp_k = warp % kWarpsK;
  const int64_t k_dim = kGateUp ? a.hidden : a.inter;
  const int64_t n_out = kGateUp ? a.inter : a.hidden;
  const int64_t out0 = (static_cast<int64_t>(blockIdx.x) * kRowWarps + row_tile) * kOutRows;

  // The weight rows of A rows g and g + 8, clamped into range (rows past the end are computed
  // and dropped).
  auto clamp_row = [n_out](int64_t row) { return row < n_out ? row : n_out - 1; };
  const bf16* w_row[2];
  if constexpr (kGateUp) {
    const bf16* w = static_cast<const bf16*>(a.w_gate_up) + expert * 2 * a.inter * a.hidden;
    const int64_t j = clamp_row(out0 + g);
    w_row[0] = w + j * a.hidden;
    w_row[1] = w + (a.inter + j) * a.hidden;
  } else {
    const bf16* w = static_cast<const bf16*>(a.w_down) + expert * a.hidden * a.inter;
    w_row[0] = w + clamp_row(out0 + g) * a.inter;
    w_row[1] = w + clamp_row(out0 + g + 8) * a.inter;
  }
  const int64_t steps = (k_dim + kStepK - 1) / kStepK;
  __shared__ float red[kWarps][kTokenTiles][4][32];

  for (int first = begin; first < end; first += kChunk) {
    // This lane's B column (token g of each token tile): x of the token, or act of the position.
    const bf16* b_row[kTokenTiles];
    bool b_ok[kTokenTiles];
#pragma unroll
    for (int tt = 0; tt < kTokenTiles; ++tt) {
      const int p = first + tt * kTileTokens + g;
      b_ok[tt] = p < end;
      if constexpr (kGateUp) {
        const int64_t token = b_ok[tt] ? a.sorted[p] / a.top_k : 0;
        b_row[tt] = static_cast<const bf16*>(a.x) + token * a.x_stride;
      } else {
        b_row[tt] = static_cast<const bf16*>(a.act) + (b_ok[tt] ? p : first) * a.inter;
      }
    }

    float acc[kTokenTiles][4] = {};
    for (int64_t s0 = warp_k; s0 < steps; s0 += kWarpsK * kUnroll) {
      uint4 wv[kUnroll][2][2];            // [step][chunk][row half]
      uint4 xv[kUnroll][2][kTokenTiles];  // [step][chunk][token tile]
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int64_t s = s0 + u * kWarpsK;
          const int64_t kk = s * kStepK + 32 * c + 8 * t;
          const bool ok = s < steps && kk < k_dim;  // k % 8 == 0: whole 8-value chunks
#pragma unroll
          for (int h = 0; h < 2; ++h) wv[u][c][h] = ok ? load_weight(w_row[h] + kk) : uint4{};
#pragma unroll
          for (int tt = 0; tt < kTokenTiles; ++tt) {
            xv[u][c][tt] =
                ok && b_ok[tt] ? __ldg(reinterpret_cast<const uint4*>(b_row[tt] + kk)) : uint4{};
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const uint4 lo = wv[u][c][0], hi = wv[u][c][1];
          const uint32_t a0[4] = {lo.x, hi.x, lo.y, hi.y};  // values 0..3: one 16-k MMA
          const uint32_t a1[4] = {lo.z, hi.z, lo.w, hi.w};  // values 4..7: the next
#pragma unroll
          for (int tt = 0; tt < kTokenTiles; ++tt) {
            const uint4 b = xv[u][c][tt];
            mma_bf16_16816(acc[tt], a0, b.x, b.y);
            mma_bf16_16816(acc[tt], a1, b.z, b.w);
          }
        }
      }
    }

    // acc[tt][e]: A row g + 8 (e / 2), token column 2t + e % 2 of tile tt.
#pragma unroll
    for (int tt = 0; tt < kTokenTiles; ++tt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) red[warp][tt][e][lane] = acc[tt][e];
    }
    __syncthreads();
    // Outputs in the order consecutive threads write consecutive rows of one column.
    constexpr int kPerTile = kTileTokens * kOutRows;
    for (int idx = threadIdx.x; idx < kRowWarps * kTokenTiles * kPerTile; idx += kThreads) {
      const int r = idx % kOutRows, col = (idx / kOutRows) % kTileTokens;
      const int tt = (idx / kPerTile) % kTokenTiles, rt = idx / (kPerTile * kTokenTiles);
      const int l = (r % 8) * 4 + col / 2;  // the lane holding it
      const int e = (r / 8) * 2 + col % 2;
      const int p = first + tt * kTileTokens + col;
      const int64_t row = (static_cast<int64_t>(blockIdx.x) * kRowWarps + rt) * kOutRows + r;
      if (p >= end || row >= n_out) continue;
      auto sum_of = [&](int element) {
        float v = 0.f;
#pragma unroll
        for (int wk = 0; wk < kWarpsK; ++wk) v += red[rt * kWarpsK + wk][tt][element][l];
        return v;
      };
      if constexpr (kGateUp) {
        static_cast<bf16*>(a.act)[p * a.inter + row] =
            __float2bfloat16_rn(silu_mul<bf16>(sum_of(e), sum_of(e + 2)));
      } else {
        a.partial[static_cast<int64_t>(a.sorted[p]) * a.hidden + row] = sum_of(e);
      }
    }
    __syncthreads();  // red is reused by the next pass
  }
}

template <Proj kProj, int kRowWarps, int kTokenTiles>
void launch_gemv(const MoeExpertsArgs& a, cudaStream_t stream) {
  constexpr int kUnroll = kTokenTiles == 1 ? 4 : 2;  // 16 weight loads in flight per thread
  const int64_t n_out = kProj == Proj::kGateUp ? a.inter : a.hidden;
  const int64_t rows_per_cta = (kProj == Proj::kGateUp ? 8 : 16) * kRowWarps;
  const dim3 grid(static_cast<unsigned>((n_out + rows_per_cta - 1) / rows_per_cta),
                  static_cast<unsigned>(std::min(a.experts, a.rows * a.top_k)));
  launch_pdl(expert_gemv_kernel<kProj, kRowWarps, kTokenTiles, kUnroll>, grid, kThreads, 0, stream,
             a);
}

// Row tiles per CTA: one (all 8 warps on k) for long rows; four (two warps each) for short
// rows, so that a CTA still has 16 loads of 16 bytes per thread in flight.
template <Proj kProj, int kTokenTiles>
void launch_projection(const MoeExpertsArgs& a, cudaStream_t stream) {
  const int64_t k_dim = kProj == Proj::kGateUp ? a.hidden : a.inter;
  if (k_dim >= 1024) {
    launch_gemv<kProj, 1, kTokenTiles>(a, stream);
  } else {
    launch_gemv<kProj, 4, kTokenTiles>(a, stream);
  }
}

}  // namespace

void launch_moe_expert_gemv(const MoeExpertsArgs& a, backend::Stream stream) {
  const auto s = backend::cuda::native_stream(stream);
  // An expert's group holds at most `rows` positions unless a token repeats an expert; larger
  // groups take several passes over the weights.
  if (a.rows <= kTileTokens) {
    launch_projection<Proj::kGateUp, 1>(a, s);
    launch_projection<Proj::kDown, 1>(a, s);
  } else {
    launch_projection<Proj::kGateUp, 2>(a, s);
    launch_projection<Proj::kDown, 2>(a, s);
  }
}

}  // namespace sgl::kernels::cuda
