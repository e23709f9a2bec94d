// The GEMV paths of fused_moe: the experts chosen in this chunk, each streamed from memory once
// per 16 of its tokens, as two tensor-core GEMVs, then the weighted sum:
//   gate/up:  act[i, j] = silu(gate_e[j] . x[token(i)]) * (up_e[j] . x[token(i)])
//   down:     partial[i, h] = down_e[h] . act[i]
//   sum:      out[t, h] = sum_j topk_weights[t, j] * partial[t * k + j, h]
// for the entries i = t * k + j of topk_ids that chose expert e. Grid (row tiles, expert slots):
// CTA (x, y) takes the y-th expert with entries and a tile of its weight rows, and loops over the
// expert's tokens 8 or 16 at a time; CTAs past the number of chosen experts exit (but for the
// masked instances' zero tiles, below). At decode (up to 64 entries, 16 on Hopper) each CTA works
// out its expert and entries from topk_ids itself (no alignment kernel); for larger batches
// (without the Hopper GEMM) they come from the block-size-1 alignment and its active list. The
// down projection's last CTA to finish a row tile sums that tile over the slots in slot order
// (no reduction kernel; the result does not depend on which CTA was last). The down projection
// finds its expert and starts its weight loads before waiting on gate/up.
// Each warp covers one 16-row MMA tile over a share of k: lane (g = lane / 4, t = lane %
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
#include "kernels/cuda/moe_plan.h"

namespace sgl::kernels::cuda {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kStepK = 64;      // k values per warp step: 4 lanes x 2 chunks x 8 values
constexpr int kTileTokens = 8;  // tokens per MMA tile (the n of m16n8k16)
static_assert(kMoeDecodeMaxPairs <= kThreads, "find_expert_group: a thread per entry");

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

// The expert of slot `slot` (the slot-th smallest distinct id among topk_ids' `entries` ids) and
// the entries that chose it, ascending, in group[0, size). expert = -1 when fewer experts were
// chosen. kMasked: ids of -1 (another rank's experts) are in no group. All threads call it;
// entries <= kMoeDecodeMaxPairs <= kThreads.
struct ExpertGroup {
  int expert = -1, size = 0, num_experts = 0;
};
template <bool kMasked>
__device__ ExpertGroup find_expert_group(const int32_t* __restrict__ topk_ids, int entries,
                                         int experts, int slot, int32_t* group) {
  __shared__ int32_t ids[kMoeDecodeMaxPairs];
  __shared__ int32_t first_seen[kMoeDecodeMaxPairs];  // 1 where ids[i] is the id's first entry
  __shared__ int32_t chosen;
  const int i = threadIdx.x;
  bool valid = i < entries;
  if (valid) {
    ids[i] = __ldcg(&topk_ids[i]);  // L2: the down projection reads it before its wait
    // An expert id out of range: a bug upstream.
    if (ids[i] < (kMasked ? -1 : 0) || ids[i] >= experts) __trap();
    if (kMasked) valid = ids[i] >= 0;
  }
  if (i == 0) chosen = -1;
  __syncthreads();
  bool first = valid;
  for (int j = 0; valid && j < i; ++j) first = first && ids[j] != ids[i];
  if (i < entries) first_seen[i] = first;  // masked entries too: the rank loop reads them
  const int distinct = __syncthreads_count(first);
  if (first) {
    int rank = 0;  // distinct ids below this one
    for (int j = 0; j < entries; ++j) rank += first_seen[j] && ids[j] < ids[i];
    if (rank == slot) chosen = ids[i];
  }
  __syncthreads();
  ExpertGroup out{.expert = chosen, .size = 0, .num_experts = distinct};
  if (out.expert < 0) return out;
  const bool mine = valid && ids[i] == out.expert;
  if (mine) {
    int position = 0;
    for (int j = 0; j < i; ++j) position += ids[j] == out.expert;
    group[position] = i;
  }
  out.size = __syncthreads_count(mine);
  return out;
}

// Called by every CTA of the down projection once its partial rows [row0, row0 + rows) are
// written: the CTA that finishes the tile last (of `ctas` with an expert) writes
// out[t, row] = sum_j topk_weights[t, j] * partial[t * k + j, row], j ascending (kMasked: over
// the pairs that are not -1; they alone have partial rows).
template <bool kMasked>
__device__ void sum_row_tile_if_last(const MoeExpertsArgs& a, int ctas, int64_t row0,
                                     int64_t rows) {
  __shared__ bool last;
  __threadfence();  // this thread's partial rows before the count that publishes them
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&a.tile_counters[blockIdx.x], 1) == ctas - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  rows = min(rows, a.hidden - row0);
  for (int64_t idx = threadIdx.x; idx < a.rows * rows; idx += kThreads) {
    const int64_t t = idx / rows, row = row0 + idx % rows;
    float sum = 0.f;
    for (int64_t j = 0; j < a.top_k; ++j) {
      if (kMasked && a.topk_ids[t * a.top_k + j] < 0) continue;
      sum +=
          a.topk_weights[t * a.top_k + j] * __ldcg(&a.partial[(t * a.top_k + j) * a.hidden + row]);
    }
    static_cast<bf16*>(a.out)[t * a.hidden + row] = __float2bfloat16_rn(sum);
  }
}

// Expert parallelism's batch where no pair is this rank's (kMasked): nothing sums into `out`, so
// the down projection's CTA (x, 0) writes its row tile's zeros, once gate/up is done (out may be
// gate/up's x).
__device__ void zero_row_tile(const MoeExpertsArgs& a, int64_t row0, int64_t rows) {
  pdl_wait();
  rows = min(rows, a.hidden - row0);
  for (int64_t idx = threadIdx.x; idx < a.rows * rows; idx += kThreads) {
    static_cast<bf16*>(a.out)[idx / rows * a.hidden + row0 + idx % rows] = __float2bfloat16_rn(0.f);
  }
}

// kRowWarps row tiles per CTA, each split over k by kWarps / kRowWarps warps; kTokenTiles x 8
// tokens per pass over the weights; kUnroll steps of loads in flight per warp. kMasked: topk_ids
// may hold -1 (another rank's expert, expert parallelism), which no CTA computes and the sum
// skips; a separate instance, since reading the masks slowed the unmasked batch-8 decode
// (docs/perf-log/2026-11-29-expert-parallel-cuda.md).
template <Proj kProj, bool kFromAlignment, bool kMasked, int kRowWarps, int kTokenTiles,
          int kUnroll>
__global__ void __launch_bounds__(kThreads, 2)
    expert_gemv_kernel(const __grid_constant__ MoeExpertsArgs a) {
  constexpr int kWarpsK = kWarps / kRowWarps;
  constexpr int kChunk = kTileTokens * kTokenTiles;
  constexpr bool kGateUp = kProj == Proj::kGateUp;
  constexpr int kOutRows = kGateUp ? 8 : 16;  // outputs per row tile
  if constexpr (kGateUp) {
    // Its experts may come from the kernel right before (the route or the alignment).
    pdl_wait();
    pdl_launch_dependents();
    // The down projection's tile counters start at zero (it uses them only after its wait on
    // this grid).
    if (blockIdx.x == 0 && blockIdx.y == 0) {
      for (int64_t i = threadIdx.x; i < a.tile_counter_count; i += kThreads) {
        a.tile_counters[i] = 0;
      }
    }
  }
  // This CTA's expert, its entries group[0, end) and the number of experts with entries.
  int64_t expert = 0;
  const int32_t* group = nullptr;
  int end = 0, num_experts = 0;
  const int64_t tile_row0 = static_cast<int64_t>(blockIdx.x) * kRowWarps * 16;
  if constexpr (kFromAlignment) {
    num_experts = __ldcg(&a.counters[1]);
    if (static_cast<int>(blockIdx.y) >= num_experts) {  // no expert for this slot
      if (kMasked && !kGateUp && num_experts == 0 && blockIdx.y == 0) {
        zero_row_tile(a, tile_row0, kRowWarps * 16);
      }
      return;
    }
    expert = __ldcg(&a.active[blockIdx.y]);
    const int begin = __ldcg(&a.offsets[expert]);
    group = a.sorted + begin;
    end = __ldcg(&a.offsets[expert + 1]) - begin;
  } else {
    __shared__ int32_t entries[kMoeDecodeMaxPairs];
    const ExpertGroup found = find_expert_group<kMasked>(
        a.topk_ids, static_cast<int>(a.rows * a.top_k), static_cast<int>(a.experts),
        static_cast<int>(blockIdx.y), entries);
    if (found.expert < 0) {  // no expert for this slot (uniform over the CTA)
      if (kMasked && !kGateUp && found.num_experts == 0 && blockIdx.y == 0) {
        zero_row_tile(a, tile_row0, kRowWarps * 16);
      }
      return;
    }
    expert = found.expert;
    group = entries;
    end = found.size;
    num_experts = found.num_experts;
  }

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

  // One step of this warp's weight loads: steps s0, s0 + kWarpsK, ... (kUnroll of them).
  uint4 wv[kUnroll][2][2];  // [step][chunk][row half]
  auto load_weights = [&](int64_t s0) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int64_t s = s0 + u * kWarpsK;
        const int64_t kk = s * kStepK + 32 * c + 8 * t;
        const bool ok = s < steps && kk < k_dim;  // k % 8 == 0: whole 8-value chunks
#pragma unroll
        for (int h = 0; h < 2; ++h) wv[u][c][h] = ok ? load_weight(w_row[h] + kk) : uint4{};
      }
    }
  };
  if constexpr (!kGateUp) {
    // The expert and its entries come from the route (or alignment) two kernels back, and the
    // weights from nobody: both were read before waiting on gate/up (pdl.cuh), so the first
    // step's weight loads overlap gate/up's tail.
    load_weights(warp_k);
    pdl_wait();
    pdl_launch_dependents();
  }
  for (int first = 0; first < end; first += kChunk) {
    // This lane's B column (token g of each token tile): x of the token, or act of the entry.
    const bf16* b_row[kTokenTiles];
    bool b_ok[kTokenTiles];
#pragma unroll
    for (int tt = 0; tt < kTokenTiles; ++tt) {
      const int p = first + tt * kTileTokens + g;
      b_ok[tt] = p < end;
      const int64_t entry = b_ok[tt] ? group[p] : group[first];
      if constexpr (kGateUp) {
        b_row[tt] = static_cast<const bf16*>(a.x) + entry / a.top_k * a.x_stride;
      } else {
        b_row[tt] = static_cast<const bf16*>(a.act) + entry * a.inter;
      }
    }

    float acc[kTokenTiles][4] = {};
    for (int64_t s0 = warp_k; s0 < steps; s0 += kWarpsK * kUnroll) {
      if (kGateUp || first != 0 || s0 != warp_k) load_weights(s0);  // else loaded above
      uint4 xv[kUnroll][2][kTokenTiles];                            // [step][chunk][token tile]
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          // load_weights' offsets, spelled again: one lambda for both measured slower at
          // batch 8 (docs/perf-log/2026-11-30-moe-kernel-costs.md).
          const int64_t s = s0 + u * kWarpsK;
          const int64_t kk = s * kStepK + 32 * c + 8 * t;
          const bool ok = s < steps && kk < k_dim;
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
      const int64_t entry = group[p];
      if constexpr (kGateUp) {
        static_cast<bf16*>(a.act)[entry * a.inter + row] =
            __float2bfloat16_rn(silu_mul<bf16>(sum_of(e), sum_of(e + 2)));
      } else {
        a.partial[entry * a.hidden + row] = sum_of(e);
      }
    }
    __syncthreads();  // red is reused by the next pass
  }
  if constexpr (!kGateUp) {
    sum_row_tile_if_last<kMasked>(a, num_experts, tile_row0, kRowWarps * 16);
  }
}

template <Proj kProj, bool kFromAlignment, bool kMasked, int kRowWarps, int kTokenTiles>
void launch_gemv(const MoeExpertsArgs& a, cudaStream_t stream) {
  constexpr int kUnroll = kTokenTiles == 1 ? 4 : 2;  // 16 weight loads in flight per thread
  const int64_t n_out = kProj == Proj::kGateUp ? a.inter : a.hidden;
  const int64_t rows_per_cta = (kProj == Proj::kGateUp ? 8 : 16) * kRowWarps;
  const dim3 grid(static_cast<unsigned>((n_out + rows_per_cta - 1) / rows_per_cta),
                  static_cast<unsigned>(std::min(a.experts, a.rows * a.top_k)));
  launch_pdl(expert_gemv_kernel<kProj, kFromAlignment, kMasked, kRowWarps, kTokenTiles, kUnroll>,
             grid, kThreads, 0, stream, a);
}

// Row tiles per CTA: four (two warps each on k) for short rows, so that a CTA still has 16 loads
// of 16 bytes per thread in flight, and for gate/up at up to 8 tokens, where fewer CTAs looping
// over k measured faster (docs/perf-log/2026-11-28-moe-decode.md) — but two there for rows
// longer than 2048 (Mixtral's 4096; Qwen3-30B-A3B's 2048 wants four:
// docs/perf-log/2026-11-28-moe-bs1-dead-ends.md); else one (all 8 warps on k).
template <Proj kProj, bool kFromAlignment, bool kMasked, int kTokenTiles>
void launch_projection(const MoeExpertsArgs& a, cudaStream_t stream) {
  const int64_t k_dim = kProj == Proj::kGateUp ? a.hidden : a.inter;
  if (kProj == Proj::kGateUp && kTokenTiles == 1 && k_dim > 2048) {
    launch_gemv<kProj, kFromAlignment, kMasked, 2, kTokenTiles>(a, stream);
  } else if (k_dim < 1024 || (kProj == Proj::kGateUp && kTokenTiles == 1)) {
    launch_gemv<kProj, kFromAlignment, kMasked, 4, kTokenTiles>(a, stream);
  } else {
    launch_gemv<kProj, kFromAlignment, kMasked, 1, kTokenTiles>(a, stream);
  }
}

template <bool kFromAlignment, bool kMasked>
void launch_both(const MoeExpertsArgs& a, cudaStream_t stream) {
  // An expert's group holds at most `rows` entries unless a token repeats an expert; larger
  // groups take several passes over the weights.
  if (a.rows <= kTileTokens) {
    launch_projection<Proj::kGateUp, kFromAlignment, kMasked, 1>(a, stream);
    launch_projection<Proj::kDown, kFromAlignment, kMasked, 1>(a, stream);
  } else {
    launch_projection<Proj::kGateUp, kFromAlignment, kMasked, 2>(a, stream);
    launch_projection<Proj::kDown, kFromAlignment, kMasked, 2>(a, stream);
  }
}

}  // namespace

void launch_moe_expert_gemv(const MoeExpertsArgs& a, bool from_alignment, bool masked,
                            backend::Stream stream) {
  const auto s = backend::cuda::native_stream(stream);
  if (from_alignment) {
    masked ? launch_both<true, true>(a, s) : launch_both<true, false>(a, s);
  } else {
    masked ? launch_both<false, true>(a, s) : launch_both<false, false>(a, s);
  }
}

}  // namespace sgl::kernels::cuda
