// The prefill path of fused_moe: two grouped GEMMs on tensor cores (mma.sync m16n8k16, bf16
// in, f32 accumulators) over the alignment's blocks of kMoeGemmBlockRows sorted positions, each
// block all of one expert:
//   gate/up:  act[p, j] = silu(gate_e[j] . x[token(p)]) * (up_e[j] . x[token(p)])
//   down:     partial[entry(p), h] = down_e[h] . act[p]
// Grid (block, column tile); CTAs of blocks past num_tokens_post_padded exit. A CTA of 4 warps
// (2 x 2) computes a 64-row x 128-column tile: the A rows are gathered through
// sorted_token_ids (x rows for gate/up, padding rows zero-filled), the B rows are 64 gate and
// the 64 matching up rows (gate/up) or 128 down rows, staged through shared memory by cp.async
// in a 3-deep ring of 32-wide k slices. Each warp owns 32 rows x 64 B rows: for gate/up, 32
// gate and the matching 32 up columns, so SiLU-and-mul happens in registers on the way out.
#include <cuda_bf16.h>

#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "kernels/cuda/common/cuda_types.cuh"
#include "kernels/cuda/common/ldmatrix_cp_async.cuh"
#include "kernels/cuda/common/mma_m16n8k16.cuh"
#include "kernels/cuda/common/pdl.cuh"
#include "kernels/cuda/moe_kernels.h"
#include "kernels/cuda/moe_plan.h"

namespace sgl::kernels::cuda {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kBlockM = static_cast<int>(kMoeGemmBlockRows);  // A rows per CTA (one block)
constexpr int kTileN = 128;                                   // B rows per CTA
constexpr int kBlockK = 32;                                   // k per pipeline stage
constexpr int kStages = 3;
constexpr int kThreads = 128;
// Shared-memory rows padded to 80 bytes: the 8 row addresses of an ldmatrix matrix (same
// 16-byte chunk, 8 consecutive rows) then fall in 8 different bank groups.
constexpr int kRowElems = kBlockK + 8;
constexpr int kChunks = kBlockK / 8;  // 16-byte chunks per row
static_assert(kBlockM == 64, "the warp layout covers 64 rows");

enum class Proj { kGateUp, kDown };

template <Proj kProj>
__global__ void __launch_bounds__(kThreads)
    grouped_gemm_kernel(const __grid_constant__ MoeExpertsArgs a) {
  constexpr bool kGateUp = kProj == Proj::kGateUp;
  __shared__ __align__(16) bf16 sa[kStages][kBlockM][kRowElems];
  __shared__ __align__(16) bf16 sb[kStages][kTileN][kRowElems];
  __shared__ int32_t entry_of[kBlockM];
  pdl_wait();
  pdl_launch_dependents();
  const int64_t block = blockIdx.x;
  if (block * kBlockM >= a.counters[0]) return;  // past num_tokens_post_padded
  const int expert = a.expert_ids[block];
  const int64_t entries = a.rows * a.top_k;  // the padding sentinel
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  if (tid < kBlockM) entry_of[tid] = a.sorted[block * kBlockM + tid];
  __syncthreads();

  const int64_t k_dim = kGateUp ? a.hidden : a.inter;
  const int64_t n0 = static_cast<int64_t>(blockIdx.y) * (kGateUp ? kTileN / 2 : kTileN);

  // The rows this thread copies a 16-byte chunk of, and where they come from (an invalid row
  // is zero-filled from a valid dummy address).
  constexpr int kCopiesA = kBlockM * kChunks / kThreads, kCopiesB = kTileN * kChunks / kThreads;
  const int chunk = tid % kChunks;
  const bf16* a_src[kCopiesA];
  bool a_ok[kCopiesA];
#pragma unroll
  for (int i = 0; i < kCopiesA; ++i) {
    const int row = tid / kChunks + i * (kThreads / kChunks);
    a_ok[i] = entry_of[row] < entries;
    if constexpr (kGateUp) {
      const int64_t token = a_ok[i] ? entry_of[row] / a.top_k : 0;
      a_src[i] = static_cast<const bf16*>(a.x) + token * a.x_stride;
    } else {
      a_src[i] = static_cast<const bf16*>(a.act) + (block * kBlockM + row) * a.inter;
    }
  }
  const bf16* b_src[kCopiesB];
  bool b_ok[kCopiesB];
#pragma unroll
  for (int i = 0; i < kCopiesB; ++i) {
    const int row = tid / kChunks + i * (kThreads / kChunks);
    if constexpr (kGateUp) {  // rows 0..63: gate rows n0.., rows 64..127: the matching up rows
      const int64_t j = n0 + row % (kTileN / 2);
      b_ok[i] = j < a.inter;
      const int64_t w_row = (row < kTileN / 2 ? 0 : a.inter) + (b_ok[i] ? j : 0);
      b_src[i] = static_cast<const bf16*>(a.w_gate_up) + (expert * 2 * a.inter + w_row) * a.hidden;
    } else {
      const int64_t h = n0 + row;
      b_ok[i] = h < a.hidden;
      b_src[i] =
          static_cast<const bf16*>(a.w_down) + (expert * a.hidden + (b_ok[i] ? h : 0)) * a.inter;
    }
  }
  auto load_stage = [&](int stage, int64_t k_tile) {
    const int64_t k = k_tile * kBlockK + chunk * 8;
    const bool k_ok = k < k_dim;  // k % 8 == 0: whole chunks
#pragma unroll
    for (int i = 0; i < kCopiesA; ++i) {
      const int row = tid / kChunks + i * (kThreads / kChunks);
      const bool ok = a_ok[i] && k_ok;
      cp_async_16(shared_address(&sa[stage][row][chunk * 8]), ok ? a_src[i] + k : a_src[i], ok);
    }
#pragma unroll
    for (int i = 0; i < kCopiesB; ++i) {
      const int row = tid / kChunks + i * (kThreads / kChunks);
      const bool ok = b_ok[i] && k_ok;
      cp_async_16(shared_address(&sb[stage][row][chunk * 8]), ok ? b_src[i] + k : b_src[i], ok);
    }
  };

  // Warp (wm, wn): A rows wm * 32 .. +32 (two m16 tiles); B rows as four pairs of n8 tiles.
  const int wm = warp % 2, wn = warp / 2;
  auto b_pair_row = [wn](int pair) {
    return kGateUp ? (pair / 2) * (kTileN / 2) + wn * 32 + (pair % 2) * 16 : wn * 64 + pair * 16;
  };
  float acc[2][8][4] = {};
  const int64_t k_tiles = (k_dim + kBlockK - 1) / kBlockK;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    cp_async_commit();
  }
  for (int64_t kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<kStages - 2>();  // k tile kt has landed (this thread's copies)
    __syncthreads();               // everyone's copies, and everyone is done with kt - 1
    const int64_t next = kt + kStages - 1;
    if (next < k_tiles) load_stage(static_cast<int>(next % kStages), next);
    cp_async_commit();
    const int stage = static_cast<int>(kt % kStages);
#pragma unroll
    for (int ks = 0; ks < kBlockK / 16; ++ks) {
      uint32_t af[2][4];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        const int row = wm * 32 + mt * 16 + (lane & 15);
        ldmatrix_x4(af[mt], shared_address(&sa[stage][row][(2 * ks + (lane >> 4)) * 8]));
      }
#pragma unroll
      for (int pair = 0; pair < 4; ++pair) {
        uint32_t bf[4];  // n8 tile 2 pair: bf[0], bf[1]; tile 2 pair + 1: bf[2], bf[3]
        const int row = b_pair_row(pair) + (lane & 7) + ((lane >> 4) << 3);
        ldmatrix_x4(bf, shared_address(&sb[stage][row][(2 * ks + ((lane >> 3) & 1)) * 8]));
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          mma_bf16_16816(acc[mt][2 * pair], af[mt], bf[0], bf[1]);
          mma_bf16_16816(acc[mt][2 * pair + 1], af[mt], bf[2], bf[3]);
        }
      }
    }
  }
  cp_async_wait<0>();

  // acc[mt][q][e]: A row wm * 32 + mt * 16 + g + 8 (e / 2), column 2t + e % 2 of n8 tile q.
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int m = wm * 32 + mt * 16 + g + 8 * half;
      if constexpr (kGateUp) {
        // Gate tiles q = 0..3 and up tiles q + 4 cover the same columns.
        const int64_t p = block * kBlockM + m;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int64_t j = n0 + wn * 32 + q * 8 + 2 * t;
          if (j >= a.inter) continue;  // inter % 8 == 0: j + 1 is in range with j
          *reinterpret_cast<__nv_bfloat162*>(static_cast<bf16*>(a.act) + p * a.inter + j) =
              __floats2bfloat162_rn(
                  silu_mul<bf16>(acc[mt][q][2 * half], acc[mt][q + 4][2 * half]),
                  silu_mul<bf16>(acc[mt][q][2 * half + 1], acc[mt][q + 4][2 * half + 1]));
        }
      } else {
        const int64_t entry = entry_of[m];
        if (entry >= entries) continue;  // padding
#pragma unroll
        for (int q = 0; q < 8; ++q) {
          const int64_t h = n0 + wn * 64 + q * 8 + 2 * t;
          if (h >= a.hidden) continue;  // hidden % 8 == 0: h + 1 is in range with h
          *reinterpret_cast<float2*>(a.partial + entry * a.hidden + h) =
              make_float2(acc[mt][q][2 * half], acc[mt][q][2 * half + 1]);
        }
      }
    }
  }
}

}  // namespace

void launch_moe_grouped_gemm(const MoeExpertsArgs& a, backend::Stream stream) {
  const auto s = backend::cuda::native_stream(stream);
  const auto blocks = static_cast<unsigned>(a.max_blocks);
  const auto gate_up_tiles = static_cast<unsigned>((a.inter + kTileN / 2 - 1) / (kTileN / 2));
  const auto down_tiles = static_cast<unsigned>((a.hidden + kTileN - 1) / kTileN);
  launch_pdl(grouped_gemm_kernel<Proj::kGateUp>, dim3(blocks, gate_up_tiles), kThreads, 0, s, a);
  launch_pdl(grouped_gemm_kernel<Proj::kDown>, dim3(blocks, down_tiles), kThreads, 0, s, a);
}

}  // namespace sgl::kernels::cuda
