// Small-batch linear layers on tensor cores (see gemv.h).
//
// A block owns 16 (or 2 x 16) weight rows and splits k across its 8 warps. Each step a warp
// covers 64 k values of its 16 rows: lane (g = lane / 4, t = lane % 4) loads 2 x 16 bytes of
// rows g and g + 8 and the same k of token g, and feeds them to m16n8k16 MMAs with the weight
// as A (16 rows x 16 k) and the tokens as B (16 k x 8 tokens). A dot product does not care in
// which order its k values are summed, so the k slots of the fragments are simply the 8
// contiguous values each lane loaded (A and B permuted alike): no shuffles, no shared memory
// on the way in, 16-byte loads that stream the weight once. Each warp keeps kUnroll steps of
// loads in flight. The warps' partial sums meet in shared memory at the end.
//
// (This register-staged form streams faster than a per-thread cp.async ring in shared memory
// or bulk copies: docs/perf-log/cuda-session-03.md and cuda-session-04.md have the variants.)
#include <cuda_bf16.h>

#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_runtime.h"
#include "backend/cuda/native_stream.h"
#include "core/alignment.h"
#include "core/host_device.h"
#include "kernels/cuda/common/add_rms_norm_row.cuh"
#include "kernels/cuda/common/cuda_types.cuh"
#include "kernels/cuda/common/mma_m16n8k16.cuh"
#include "kernels/cuda/common/pdl.cuh"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/stream_gemms.h"

namespace sgl::kernels::cuda {
namespace {

constexpr int kWarps = 8;  // warps per block, splitting k
constexpr int kThreads = 32 * kWarps;
constexpr int kStepK = 64;     // k values per warp step: 4 lanes x 2 chunks x 8 values
constexpr int kTileRows = 16;  // weight rows per MMA tile
static_assert(kTileRows == kGemvRowsPerBlock, "gemv's blocks hold one row tile (gemv.h)");
constexpr int kTileTokens = 8;  // tokens per MMA tile
static_assert(kNormFoldMaxRows <= kTileTokens, "a folded norm runs one token tile");

// Rows of at most this many k values make a short block (three_blocks_per_sm).
constexpr int64_t kShortBlockK = 4096;

enum class Epilogue {
  kStore,    // y[token, j] = acc (+ bias[j]); row tile r of block b is rows (b R + r) 16 ..
  kSiluMul,  // out[token, j] = silu(gate) * up; tile 0 = gate rows b 16 .., tile 1 = up rows
};

struct GemvParams {
  const __nv_bfloat16* x;  // [m, k], row stride x_stride
  int64_t x_stride;
  int m;
  const __nv_bfloat16* w;  // kStore: [n, k]; kSiluMul: [2n, k] = [gate; up]
  int64_t k;
  int64_t n;                  // output columns
  const __nv_bfloat16* bias;  // [n] or nullptr (kStore only)
  void* y;                    // [m, n], contiguous
  // A folded norm (fold_norm_applies: m <= kNormFoldMaxRows, k <= kGemvFoldNormMaxWidth, ...):
  // the input rows are rms_norm(residual_in + x) * norm_weight, which every block computes itself;
  // block 0 writes residual_in + x to residual_out and, if not null, the normed rows to normed.
  const float* residual_in;  // [m, k]
  float* residual_out;       // [m, k]
  const __nv_bfloat16* norm_weight;
  float eps;
  __nv_bfloat16* normed;  // [m, k] or nullptr
};

// 16 weight bytes, streamed past L1 (each is read once, while x stays cached), asking L2 for
// the whole 128-byte line: a lane's two 64-byte halves of a line are separate loads, and
// without the hint the fused gate/up kernel fetched lines twice (L2::256B was worse:
// docs/perf-log/cuda-session-03.md).
__device__ __forceinline__ uint4 load_weight(const __nv_bfloat16* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.L2::128B.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// A folded norm's rows in the block: a row of C = k / 8 chunks takes W = ceil(C / 32) warps, a
// thread per chunk (add_rms_norm_vec_kernel's block for the row: norm_rope.cu), 8 / W rows a
// pass. Rows of kGemvFoldNormMaxValues values at most make two passes (gemv_fold_norm_applies
// checks); the kernel has an instance for each count, since each pass's loads hold registers.
static_assert(kGemvFoldNormMaxWidth / 8 <= kAddRmsNormMaxThreads,
              "the norm kernel gives rows this wide a thread per chunk too");
static_assert(kGemvFoldNormMaxWidth / 8 <= kThreads, "fold_add_rms_norm: a thread per chunk");
constexpr int kFoldNormMaxPasses = 2;

// How a GEMV instance gets its input rows: as they are, or by a folded norm in one or two passes
// of rows (FoldNormLayout), or a warp per row (fold_add_rms_norm_warp_rows).
enum class Fold { kNone, kOnePass, kTwoPasses, kWarpRows };

// A warp per row: lane l holds the row's chunks l, l + 32, ... (kFoldWarpRowChunks at most).
constexpr int kFoldWarpRowChunks = static_cast<int>(kGemvFoldNormWarpRowMaxWidth / 8 / 32);
static_assert(kGemvFoldNormWarpRowMaxWidth % (8 * 32) == 0 &&
                  kGemvFoldNormWarpRowMaxWidth <= kGemvFoldNormMaxWidth,
              "fold_add_rms_norm_warp_rows: whole warps of chunks");
static_assert(kNormFoldMaxRows <= kWarps, "fold_add_rms_norm_warp_rows: a warp per row");
// The normed rows in shared memory lie k + kNormedRowPad values apart: at k a multiple of 64
// (576, 2048) rows k apart put the MMAs' B loads of the 8 token rows (16 bytes each) in the same
// banks. (No step measured faster or slower for it: docs/perf-log/2026-12-02-eagle3-data.md.)
constexpr int kNormedRowPad = 8;
constexpr int64_t kNormedValues = kGemvFoldNormMaxValues + kNormFoldMaxRows * kNormedRowPad;
constexpr int64_t kNormedValuesWarpRows =
    kNormFoldMaxRows * (kGemvFoldNormWarpRowMaxWidth + kNormedRowPad);

// Whether m rows of k values fold a warp per row.
bool fold_warp_rows(int64_t k, int64_t m) {
  return k <= kGemvFoldNormWarpRowMaxWidth && m >= kGemvFoldNormWarpRowMinRows;
}

struct FoldNormLayout {
  int chunks, warps_per_row, rows_per_pass;
  SGL_HOST_DEVICE explicit FoldNormLayout(int64_t k)
      : chunks(static_cast<int>(k / 8)),
        warps_per_row((chunks + 31) / 32),
        rows_per_pass(kWarps / warps_per_row) {}
  SGL_HOST_DEVICE int passes(int m) const { return (m + rows_per_pass - 1) / rows_per_pass; }
  // This thread's row slot in a pass (rows_per_pass and up: none) and chunk.
  __device__ int slot() const { return static_cast<int>(threadIdx.x / 32) / warps_per_row; }
  __device__ int chunk() const {
    return static_cast<int>(threadIdx.x / 32) % warps_per_row * 32 + threadIdx.x % 32;
  }
};

// The folded norm's prologue (kPasses passes), after the wait: v = residual_in + x and its RMSNorm
// for each of the m rows into x_normed (rows `stride` apart), with the norm kernel's arithmetic,
// so the bits are
// its: the row's sums of squares meet as block_sum's do (each warp's, then the W warps' in one
// warp). Every pass's loads go out before the first sum. norm_w: this thread's chunk of the norm
// weight, loaded before the wait.
template <int kPasses>
__device__ __forceinline__ void fold_add_rms_norm(const GemvParams& p, const uint4 norm_w,
                                                  __nv_bfloat16* x_normed, int64_t stride) {
  const FoldNormLayout layout(p.k);
  const int slot = layout.slot(), i = layout.chunk(), lane = threadIdx.x % 32;
  auto row_of = [&](int pass) { return pass * layout.rows_per_pass + slot; };
  auto mine = [&](int pass) {
    return slot < layout.rows_per_pass && row_of(pass) < p.m && i < layout.chunks;
  };
  uint4 x[kPasses];
  float4 residual[kPasses][2];
#pragma unroll
  for (int pass = 0; pass < kPasses; ++pass) {
    if (mine(pass)) {
      const int64_t r = row_of(pass);
      x[pass] = __ldg(reinterpret_cast<const uint4*>(p.x + r * p.x_stride) + i);
      const float4* res = reinterpret_cast<const float4*>(p.residual_in + r * p.k) + 2 * i;
      residual[pass][0] = res[0];
      residual[pass][1] = res[1];
    }
  }
  __shared__ float partial[kWarps];
#pragma unroll
  for (int pass = 0; pass < kPasses; ++pass) {
    float v[8];
    float sum_sq = 0.f;
    if (mine(pass)) add_chunk(x[pass], residual[pass], v, sum_sq);
    sum_sq = warp_sum(sum_sq);
    if (lane == 0) partial[threadIdx.x / 32] = sum_sq;
    __syncthreads();
    // The row's W partials in lanes 0..W-1, the others zeros: block_sum's second stage.
    const int w = layout.warps_per_row;
    const float total =
        warp_sum(lane < w && slot < layout.rows_per_pass ? partial[slot * w + lane] : 0.f);
    if (mine(pass)) {
      const int64_t at = row_of(pass) * p.k + 8 * i;
      const float inv = rsqrtf(total / static_cast<float>(p.k) + p.eps);
      const uint4 out = normed_chunk(v, inv, norm_w);
      *reinterpret_cast<uint4*>(x_normed + row_of(pass) * stride + 8 * i) = out;
      if (blockIdx.x == 0) {
        store_chunk(v, reinterpret_cast<float4*>(p.residual_out + at));
        if (p.normed != nullptr) *reinterpret_cast<uint4*>(p.normed + at) = out;
      }
    }
    __syncthreads();  // partial is reused; after the last pass, x_normed is whole
  }
}

// The folded norm a warp per row (rows of C <= 32 kFoldWarpRowChunks chunks, up to kWarps rows),
// after the wait: lane l of warp r holds row r's chunks l, l + 32, ..., which are the norm
// kernel's threads l, l + 32, ... of its W = ceil(C / 32) warps; the W sums of squares are
// reduced as those warps' are and then combined as block_sum's second stage combines them, so
// the bits are the norm kernel's, in one pass and with no barrier but the last. (Registers: the
// weights' first steps are in flight meanwhile, so the norm weight is loaded once the sums are
// in, from L2; loaded before the wait, three chunks a lane spilled.)
__device__ __forceinline__ void fold_add_rms_norm_warp_rows(const GemvParams& p,
                                                            __nv_bfloat16* x_normed,
                                                            int64_t stride) {
  const int row = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int chunks = static_cast<int>(p.k / 8);
  auto mine = [&](int j) { return row < p.m && j * 32 + lane < chunks; };
  uint4 x[kFoldWarpRowChunks];
  float4 residual[kFoldWarpRowChunks][2];
#pragma unroll
  for (int j = 0; j < kFoldWarpRowChunks; ++j) {
    if (mine(j)) {
      const int i = j * 32 + lane;
      x[j] = __ldg(reinterpret_cast<const uint4*>(p.x + row * p.x_stride) + i);
      const float4* res = reinterpret_cast<const float4*>(p.residual_in + row * p.k) + 2 * i;
      residual[j][0] = res[0];
      residual[j][1] = res[1];
    }
  }
  float v[kFoldWarpRowChunks][8];
  float second = 0.f;  // block_sum's second stage: warp j's sum in lane j, zeros elsewhere
#pragma unroll
  for (int j = 0; j < kFoldWarpRowChunks; ++j) {
    float sum_sq = 0.f;
    if (mine(j)) add_chunk(x[j], residual[j], v[j], sum_sq);
    sum_sq = warp_sum(sum_sq);
    if (lane == j && j * 32 < chunks) second = sum_sq;
  }
  const float total = warp_sum(second);
  const float inv = rsqrtf(total / static_cast<float>(p.k) + p.eps);
#pragma unroll
  for (int j = 0; j < kFoldWarpRowChunks; ++j) {
    if (!mine(j)) continue;
    const int i = j * 32 + lane;
    const uint4 w = __ldg(reinterpret_cast<const uint4*>(p.norm_weight) + i);
    const uint4 out = normed_chunk(v[j], inv, w);
    *reinterpret_cast<uint4*>(x_normed + row * stride + 8 * i) = out;
    if (blockIdx.x == 0) {
      const int64_t at = row * p.k + 8 * i;
      store_chunk(v[j], reinterpret_cast<float4*>(p.residual_out + at));
      if (p.normed != nullptr) *reinterpret_cast<uint4*>(p.normed + at) = out;
    }
  }
  __syncthreads();  // x_normed is whole
}

template <int kTokenTiles, int kRowTiles, int kUnroll, Epilogue kEpilogue, typename OutT,
          int kBlocksPerSm = 2, Fold kFold = Fold::kNone>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    gemv_kernel(const __grid_constant__ GemvParams p) {
  // kFold: the input rows are the folded norm's (fold_add_rms_norm*).
  constexpr bool kFoldNorm = kFold != Fold::kNone;
  static_assert(!kFoldNorm || kTokenTiles == 1);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;

  // The two weight rows (g, g + 8) this lane reads in each row tile, clamped into range (rows
  // past n are computed and dropped).
  const __nv_bfloat16* w_row[kRowTiles][2];
#pragma unroll
  for (int r = 0; r < kRowTiles; ++r) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      int64_t j = g + 8 * h, row;
      if constexpr (kEpilogue == Epilogue::kStore) {
        j += (static_cast<int64_t>(blockIdx.x) * kRowTiles + r) * kTileRows;
        row = j < p.n ? j : p.n - 1;
      } else {
        j += static_cast<int64_t>(blockIdx.x) * kTileRows;
        row = (j < p.n ? j : p.n - 1) + r * p.n;
      }
      w_row[r][h] = p.w + row * p.k;
    }
  }
  const __nv_bfloat16* x_row[kTokenTiles];
  bool token_ok[kTokenTiles];
#pragma unroll
  for (int tt = 0; tt < kTokenTiles; ++tt) {
    const int token = tt * kTileTokens + g;
    token_ok[tt] = token < p.m;
    x_row[tt] = p.x + (token_ok[tt] ? token : 0) * p.x_stride;
  }

  float acc[kRowTiles][kTokenTiles][4] = {};
  const int64_t steps = (p.k + kStepK - 1) / kStepK;

  // Calls fn(u, c, kk, ok) for chunk c of step u of the kUnroll steps from s0: this lane's 8
  // values from k index kk, ok when they exist (k % 8 == 0: whole chunks).
  auto for_each_chunk = [&](int64_t s0, auto&& fn) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t s = s0 + u * kWarps;
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int64_t kk = s * kStepK + 32 * c + 8 * t;
        fn(u, c, kk, s < steps && kk < p.k);
      }
    }
  };
  uint4 wv[kUnroll][2][kRowTiles][2];  // [step][chunk][tile][row half]
  auto load_weights = [&](int64_t s0) {
    for_each_chunk(s0, [&](int u, int c, int64_t kk, bool ok) {
#pragma unroll
      for (int r = 0; r < kRowTiles; ++r) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          wv[u][c][r][h] = ok ? load_weight(w_row[r][h] + kk) : make_uint4(0, 0, 0, 0);
        }
      }
    });
  };
  // kFoldNorm: the normed rows, k + kNormedRowPad values apart (token g's column of the MMAs' B
  // reads row g), and (the passes) this thread's chunk of the norm weight (constant: read before
  // the wait).
  __shared__ alignas(16) __nv_bfloat16 x_normed[kFold == Fold::kWarpRows ? kNormedValuesWarpRows
                                                : kFoldNorm              ? kNormedValues
                                                                         : 8];
  const int64_t normed_stride = p.k + kNormedRowPad;
  uint4 norm_w = make_uint4(0, 0, 0, 0);
  if constexpr (kFoldNorm && kFold != Fold::kWarpRows) {
    const int i = FoldNormLayout(p.k).chunk();
    if (i < p.k / 8) norm_w = __ldg(reinterpret_cast<const uint4*>(p.norm_weight) + i);
  }
  // The first steps' weights go out before the wait, into registers: a block placed during the
  // tail of the kernel before (the last wave of the GEMV before, a norm, flash decode) has its
  // first weight bytes in flight when that kernel ends. And the next kernel launches as soon as
  // every block of this one runs, so its launch latency hides behind this one's work
  // (docs/perf-log/cuda-session-07.md). Asking L2 for the lines instead (prefetch.global.L2,
  // bulk prefetches) made steps slower (cuda-session-04.md, cuda-session-07.md). The loads sit
  // under a branch: ptxas hoists the wait above an unconditional block of them, and with the
  // wait first nothing was gained.
  if (warp < steps) load_weights(warp);
  pdl_wait();
  pdl_launch_dependents();
  if constexpr (kFold == Fold::kWarpRows) {
    fold_add_rms_norm_warp_rows(p, x_normed, normed_stride);
  } else if constexpr (kFoldNorm) {
    fold_add_rms_norm<kFold == Fold::kOnePass ? 1 : 2>(p, norm_w, x_normed, normed_stride);
  }

  for (int64_t s0 = warp; s0 < steps; s0 += kWarps * kUnroll) {
    if (s0 != warp) load_weights(s0);
    uint4 xv[kUnroll][2][kTokenTiles];  // [step][chunk][token tile]
    for_each_chunk(s0, [&](int u, int c, int64_t kk, bool ok) {
#pragma unroll
      for (int tt = 0; tt < kTokenTiles; ++tt) {
        if constexpr (kFoldNorm) {
          xv[u][c][tt] = ok && token_ok[tt]
                             ? *reinterpret_cast<const uint4*>(x_normed + g * normed_stride + kk)
                             : make_uint4(0, 0, 0, 0);
        } else {
          xv[u][c][tt] = ok && token_ok[tt] ? __ldg(reinterpret_cast<const uint4*>(x_row[tt] + kk))
                                            : make_uint4(0, 0, 0, 0);
        }
      }
    });
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int c = 0; c < 2; ++c) {
#pragma unroll
        for (int r = 0; r < kRowTiles; ++r) {
          const uint4 lo = wv[u][c][r][0], hi = wv[u][c][r][1];
          // Values 0..3 of the chunk form one 16-k MMA, values 4..7 the next.
          const uint32_t a0[4] = {lo.x, hi.x, lo.y, hi.y};
          const uint32_t a1[4] = {lo.z, hi.z, lo.w, hi.w};
#pragma unroll
          for (int tt = 0; tt < kTokenTiles; ++tt) {
            const uint4 b = xv[u][c][tt];
            mma_bf16_16816(acc[r][tt], a0, b.x, b.y);
            mma_bf16_16816(acc[r][tt], a1, b.z, b.w);
          }
        }
      }
    }
  }

  // Sum the warps' partials: red[warp][tile][token tile][fragment element][lane].
  __shared__ float red[kWarps][kRowTiles][kTokenTiles][4][32];
#pragma unroll
  for (int r = 0; r < kRowTiles; ++r) {
#pragma unroll
    for (int tt = 0; tt < kTokenTiles; ++tt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) red[warp][r][tt][e][lane] = acc[r][tt][e];
    }
  }
  __syncthreads();
  constexpr int kOutTiles = kEpilogue == Epilogue::kStore ? kRowTiles : 1;
  static_assert(kOutTiles * kTokenTiles * 4 * 32 <= kThreads);
  const int idx = threadIdx.x;
  if (idx >= kOutTiles * kTokenTiles * 4 * 32) return;
  const int l = idx % 32, e = (idx / 32) % 4, tt = (idx / 128) % kTokenTiles,
            r = idx / (128 * kTokenTiles);
  const int token = tt * kTileTokens + 2 * (l % 4) + e % 2;
  const int row_in_tile = l / 4 + 8 * (e / 2);
  if (token >= p.m) return;
  auto sum_of = [&](int tile) {
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) s += red[w][tile][tt][e][l];
    return s;
  };
  if constexpr (kEpilogue == Epilogue::kStore) {
    const int64_t j = (static_cast<int64_t>(blockIdx.x) * kRowTiles + r) * kTileRows + row_in_tile;
    if (j >= p.n) return;
    float v = sum_of(r);
    if (p.bias != nullptr) v += __bfloat162float(p.bias[j]);
    static_cast<OutT*>(p.y)[token * p.n + j] = from_float<OutT>(v);
  } else {
    const int64_t j = static_cast<int64_t>(blockIdx.x) * kTileRows + row_in_tile;
    if (j >= p.n) return;
    static_cast<__nv_bfloat16*>(p.y)[token * p.n + j] =
        from_float<__nv_bfloat16>(silu_mul<__nv_bfloat16>(sum_of(0), sum_of(1)));
  }
}

// Whether a one-token-tile grid of `blocks` runs three blocks per SM (kUnroll 2) instead of two
// (the comment above launch()).
bool three_blocks_per_sm(int64_t blocks, int64_t k, int sms) {
  if (blocks > 3 * sms) return false;
  return blocks > 2 * sms || (blocks > sms && k <= kShortBlockK);
}

// Loads in flight per thread stay at 16 x 16 bytes whatever the tiles (registers: two blocks
// of 8 warps per SM), except where three blocks per SM, with half the loads in flight
// (kUnroll 2), pay:
// - a grid of one to 1.5 waves at two blocks per SM runs as one wave at three (Llama-3-8B's
//   qkv at 1 token, 384 blocks on 132 SMs, got faster: docs/perf-log/cuda-session-06.md).
// - a grid of short blocks (k <= kShortBlockK) between one and two waves at two per SM, such
//   as the attention output projection, then fits on the SMs flash decode's CTAs leave free,
//   so all of its blocks are placed while decode runs and have their first weights in flight
//   when it ends (the merge kernel launches it early after a few decode CTAs:
//   flash_decode.cu). Batch 1 got faster; three per SM without the early launch, or the early
//   launch with two per SM, gained nothing, and three per SM for the down projection
//   (k = 14336) was slower: docs/perf-log/cuda-session-09.md.
template <int kRowTiles, Epilogue kEpilogue, typename OutT, Fold kFold = Fold::kNone>
void launch(const GemvParams& p, int64_t blocks, backend::Stream stream) {
  const int sms = StreamGemms::of(stream).sm_count;
  const auto s = backend::cuda::native_stream(stream);
  const dim3 grid(static_cast<unsigned>(blocks));
  constexpr int kUnroll = 4 / kRowTiles;
  // (No three-per-SM variant of the two-tile gate/up kernel, nor of a warp per row's fold, whose
  // registers would spill.)
  if constexpr (kRowTiles == 1 && kFold != Fold::kWarpRows) {
    if (p.m <= kTileTokens && three_blocks_per_sm(blocks, p.k, sms)) {
      launch_pdl(gemv_kernel<1, 1, 2, kEpilogue, OutT, 3, kFold>, grid, kThreads, 0, s, p);
      return;
    }
  }
  if (p.m <= kTileTokens) {
    launch_pdl(gemv_kernel<1, kRowTiles, kUnroll, kEpilogue, OutT, 2, kFold>, grid, kThreads, 0, s,
               p);
  } else if constexpr (kFold == Fold::kNone) {
    launch_pdl(gemv_kernel<2, kRowTiles, kUnroll / 2, kEpilogue, OutT>, grid, kThreads, 0, s, p);
  }
}

// launch() in the instance p asks for: with a folded norm (p.residual_in set), a warp per row
// (fold_warp_rows), or else the one of as many passes as its rows take.
template <int kRowTiles, Epilogue kEpilogue, typename OutT>
void launch_for(const GemvParams& p, int64_t blocks, backend::Stream stream) {
  static_assert(kFoldNormMaxPasses == 2, "an instance for each pass count");
  if (p.residual_in == nullptr) {
    launch<kRowTiles, kEpilogue, OutT>(p, blocks, stream);
  } else if (fold_warp_rows(p.k, p.m)) {
    launch<kRowTiles, kEpilogue, OutT, Fold::kWarpRows>(p, blocks, stream);
  } else if (FoldNormLayout(p.k).passes(p.m) == 1) {
    launch<kRowTiles, kEpilogue, OutT, Fold::kOnePass>(p, blocks, stream);
  } else {
    launch<kRowTiles, kEpilogue, OutT, Fold::kTwoPasses>(p, blocks, stream);
  }
}

// The plain projection (kStore, a block per 16 rows of y), in y's dtype.
void launch_projection(const GemvParams& p, const Tensor& y, backend::Stream stream) {
  const int64_t blocks = (p.n + kTileRows - 1) / kTileRows;
  if (y.dtype() == DType::kF32) {
    launch_for<1, Epilogue::kStore, float>(p, blocks, stream);
  } else {
    SGL_CHECK(y.dtype() == DType::kBF16) << "gemv: y must be bf16 or f32";
    launch_for<1, Epilogue::kStore, __nv_bfloat16>(p, blocks, stream);
  }
}

GemvParams params_of(const Tensor& x, const Tensor& w, int64_t n, const Tensor& bias,
                     const Tensor& y) {
  return GemvParams{
      .x = static_cast<const __nv_bfloat16*>(x.raw()),
      .x_stride = x.stride(0),
      .m = static_cast<int>(x.size(0)),
      .w = static_cast<const __nv_bfloat16*>(w.raw()),
      .k = w.size(1),
      .n = n,
      .bias = bias.defined() ? static_cast<const __nv_bfloat16*>(bias.raw()) : nullptr,
      .y = y.raw(),
      .residual_in = nullptr,
      .residual_out = nullptr,
      .norm_weight = nullptr,
      .eps = 0.f,
      .normed = nullptr};
}

// params_of with the folded norm's fields.
GemvParams fold_params_of(const Tensor& x, const ResidualRmsNorm& norm, const Tensor& w, int64_t n,
                          const Tensor& bias, const Tensor& y, const Tensor& normed) {
  GemvParams p = params_of(x, w, n, bias, y);
  p.residual_in = static_cast<const float*>(norm.residual_in.raw());
  p.residual_out = static_cast<float*>(norm.residual_out.raw());
  p.norm_weight = static_cast<const __nv_bfloat16*>(norm.weight.raw());
  p.eps = static_cast<float>(norm.eps);
  p.normed = normed.defined() ? static_cast<__nv_bfloat16*>(normed.raw()) : nullptr;
  return p;
}

// t: `width` contiguous values of `dtype` on `device`, 16-byte aligned.
bool is_row_of(const Tensor& t, DType dtype, int64_t width, Device device) {
  return t.defined() && t.dtype() == dtype && t.numel() == width && t.is_contiguous() &&
         t.device() == device && is_aligned(t.raw(), 16);
}

// t: [m, width] contiguous rows of `dtype` on `device`, 16-byte aligned.
bool is_rows_of(const Tensor& t, DType dtype, int64_t m, int64_t width, Device device) {
  return t.defined() && t.ndim() == 2 && t.size(0) == m && t.size(1) == width &&
         t.dtype() == dtype && t.is_contiguous() && t.device() == device && is_aligned(t.raw(), 16);
}

bool disjoint(const Tensor& a, const Tensor& b) {
  const auto* pa = static_cast<const char*>(a.raw());
  const auto* pb = static_cast<const char*>(b.raw());
  return pa + a.nbytes() <= pb || pb + b.nbytes() <= pa;
}

// gemv_fold_norm_applies on a GPU of `sms` multiprocessors.
bool fold_norm_applies(const Tensor& x, const ResidualRmsNorm& norm, const Tensor& w,
                       bool silu_and_mul, int sms) {
  const int64_t m = x.ndim() == 2 ? x.size(0) : 0, h = x.ndim() == 2 ? x.size(1) : 0;
  const bool warp_rows = fold_warp_rows(h, m);
  if (!(gemv_applies(x, w) && m <= kNormFoldMaxRows && w.size(1) == h && h > 0 && h % 8 == 0 &&
        h <= kGemvFoldNormMaxWidth &&
        // (m h <= kGemvFoldNormMaxValues implies two passes at most; the check keeps the
        // instances' count honest should either limit change.)
        (warp_rows || (m * h <= kGemvFoldNormMaxValues &&
                       FoldNormLayout(h).passes(static_cast<int>(m)) <= kFoldNormMaxPasses)) &&
        is_rows_of(norm.residual_in, DType::kF32, m, h, x.device()) &&
        is_rows_of(norm.residual_out, DType::kF32, m, h, x.device()) &&
        is_row_of(norm.weight, DType::kBF16, h, x.device()) && w.device() == x.device() &&
        disjoint(norm.residual_in, norm.residual_out))) {
    return false;
  }
  // One wave of the blocks launch() places an SM. A Llama-3.2-1B-shaped gate/up (512 blocks,
  // two waves) made batch-1 steps 1.3% slower folded (docs/perf-log/2026-12-02-folded-norm.md).
  const int64_t blocks = ((silu_and_mul ? w.size(0) / 2 : w.size(0)) + kTileRows - 1) / kTileRows;
  const bool three = !silu_and_mul && !warp_rows && three_blocks_per_sm(blocks, h, sms);
  return blocks <= (three ? 3 : 2) * static_cast<int64_t>(sms);
}

}  // namespace

bool gemv_applies(const Tensor& x, const Tensor& w) {
  return x.dtype() == DType::kBF16 && w.dtype() == DType::kBF16 && x.size(0) >= 1 &&
         x.size(0) <= kGemvMaxTokens && w.size(1) % 8 == 0 && x.stride(0) % 8 == 0 &&
         w.is_contiguous() && is_aligned(x.raw(), 16) && is_aligned(w.raw(), 16);
}

void gemv(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
          backend::Stream stream) {
  SGL_CHECK(gemv_applies(x, w)) << "gemv: x " << x.shape_string() << " w " << w.shape_string();
  SGL_CHECK(!bias.defined() || bias.dtype() == DType::kBF16) << "gemv: bias must be bf16";
  launch_projection(params_of(x, w, w.size(0), bias, y), y, stream);
}

void gemv_silu_and_mul(const Tensor& x, const Tensor& w, const Tensor& out,
                       backend::Stream stream) {
  SGL_CHECK(gemv_applies(x, w) && out.dtype() == DType::kBF16 && w.size(0) == 2 * out.size(1))
      << "gemv_silu_and_mul: x " << x.shape_string() << " w " << w.shape_string() << " out "
      << out.shape_string();
  const int64_t n = out.size(1);
  const GemvParams p = params_of(x, w, n, Tensor(), out);
  launch<2, Epilogue::kSiluMul, __nv_bfloat16>(p, (n + kTileRows - 1) / kTileRows, stream);
}

bool gemv_fold_norm_applies(const Tensor& x, const ResidualRmsNorm& norm, const Tensor& w,
                            bool silu_and_mul) {
  return fold_norm_applies(x, norm, w, silu_and_mul,
                           backend::cuda::multiprocessor_count(x.device().index));
}

void gemv_add_rms_norm(const Tensor& x, const ResidualRmsNorm& norm, const Tensor& w,
                       const Tensor& bias, const Tensor& y, const Tensor& normed,
                       backend::Stream stream) {
  // (kernels/norm_linear.cpp checked the shapes.) The normed rows may not be x, which the other
  // blocks still read.
  SGL_CHECK(
      fold_norm_applies(x, norm, w, /*silu_and_mul=*/false, StreamGemms::of(stream).sm_count) &&
      (!normed.defined() ||
       (is_rows_of(normed, DType::kBF16, x.size(0), x.size(1), x.device()) && disjoint(normed, x))))
      << "gemv_add_rms_norm: x " << x.shape_string() << " w " << w.shape_string();
  SGL_CHECK(!bias.defined() || bias.dtype() == DType::kBF16) << "gemv: bias must be bf16";
  launch_projection(fold_params_of(x, norm, w, w.size(0), bias, y, normed), y, stream);
}

void gemv_add_rms_norm_silu_and_mul(const Tensor& x, const ResidualRmsNorm& norm, const Tensor& w,
                                    const Tensor& out, backend::Stream stream) {
  // (kernels/norm_linear.cpp checked the shapes.)
  SGL_CHECK(
      fold_norm_applies(x, norm, w, /*silu_and_mul=*/true, StreamGemms::of(stream).sm_count) &&
      out.dtype() == DType::kBF16)
      << "gemv_add_rms_norm_silu_and_mul: x " << x.shape_string() << " w " << w.shape_string()
      << " out " << out.shape_string();
  const int64_t n = out.size(1);
  const GemvParams p = fold_params_of(x, norm, w, n, Tensor(), out, Tensor());
  launch_for<2, Epilogue::kSiluMul, __nv_bfloat16>(p, (n + kTileRows - 1) / kTileRows, stream);
}

}  // namespace sgl::kernels::cuda
