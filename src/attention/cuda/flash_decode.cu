// Flash decoding: split-KV decode attention on bf16 tensor cores, then a merge of the splits'
// partial (max, sum, output) in f32. One CTA = one (request, KV head, split); its warps share
// the group's q heads (the MMA rows, padded to 16) and take 16 KV tokens each per tile. A
// variant does the new token's RoPE and KV store itself (kRope). The cache is bf16 or FP8
// (kv_format.cuh), whose tiles are widened to bf16 in shared memory.
#include <type_traits>

#include "attention/cuda/flash_attention.h"
#include "attention/cuda/kv_store.h"
#include "attention/cuda/split_kv_policy.h"
#include "attention/cuda/warp_attention.cuh"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "kernels/cuda/common/head_rms_norm.cuh"
#include "kernels/cuda/common/pdl.cuh"
#include "kernels/cuda/common/rotate_half.cuh"

namespace sgl::attention::cuda {
namespace {

// Each request's new token, for a decode kernel that does the token's RoPE and KV store itself
// (flash_decode with DecodeNewTokens).
struct NewTokenParams {
  const bf16* k;  // [bs, kv_heads, dim], rows strided, not rotated
  int64_t k_token_stride;
  int64_t k_head_stride;
  const bf16* v;  // [bs, kv_heads, dim], rows strided
  int64_t v_token_stride;
  int64_t v_head_stride;
  const int32_t* positions;      // [bs]
  const float* cos_sin;          // [max_pos, dim]: cos | sin halves
  const int32_t* out_cache_loc;  // [bs]
  void* k_cache;                 // the caches DecodeParams reads, written here
  void* v_cache;
  // Per-head RMSNorm of q and the new k before their rotation (nullptr: none; dim 64 or 128).
  const bf16* q_norm;  // [dim]
  const bf16* k_norm;  // [dim]
  float norm_eps;
};

struct DecodeParams {
  const bf16* q;  // [bs, q_heads, dim], rows strided
  int64_t q_token_stride;
  int64_t q_head_stride;
  const void* k_cache;  // [slots, kv_heads, dim] of the config's KvFormat
  const void* v_cache;  // [slots, kv_heads, dim]
  float k_scale;        // FP8 caches: a code reads as float(code) * scale
  float v_scale;
  bf16* out;                  // [bs, q_heads * dim]
  float* partial_o;           // [bs * num_splits * q_heads, dim]
  float* partial_lse;         // [bs * num_splits * q_heads]
  const int32_t* seq_lens;    // [bs]
  const int32_t* kv_indptr;   // [bs + 1]
  const int32_t* kv_indices;  // [sum(seq_lens)]
  int q_heads;
  int kv_heads;
  int group;  // q heads per KV head, <= 16
  int num_splits;
  float scale_log2;  // softmax scale * log2(e)
  // Each row's last fresh_span positions may be written by the kernel before (1: a decode's
  // newest token; a verify's new tokens as rows); their tiles are copied after the wait.
  int fresh_span;
  NewTokenParams fresh;  // kRope kernels only
};

// The RoPE angles of one 16-byte chunk c of the first half of a head: dims 8c .. 8c + 7.
struct ChunkAngles {
  float cos[8];
  float sin[8];

  // row: the position's [dim] cos | sin row.
  __device__ void load(const float* row, int chunk, int dim) {
    const float4* c = reinterpret_cast<const float4*>(row + chunk * 8);
    const float4* s = reinterpret_cast<const float4*>(row + dim / 2 + chunk * 8);
    const float4 c0 = c[0], c1 = c[1], s0 = s[0], s1 = s[1];
    const float cs[16] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w,
                          s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w};
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      cos[e] = cs[e];
      sin[e] = cs[8 + e];
    }
  }
  // lo: x[8c .. 8c + 7], hi: the partners x[D/2 + 8c ..]; rotated in place as kernels::rope
  // rotates them.
  __device__ void rotate(uint4& lo, uint4& hi) const {
    auto* l = reinterpret_cast<bf16*>(&lo);
    auto* h = reinterpret_cast<bf16*>(&hi);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      kernels::cuda::rotate_half_values(__bfloat162float(l[e]), __bfloat162float(h[e]), cos[e],
                                        sin[e], l[e], h[e]);
    }
  }
};

// kRope with a QkNorm: one head's chunk pair (lo: chunk c, hi: chunk c + D / 16) normalized as
// qk_rms_norm would, by the D / 16 consecutive lanes holding that head's pairs together.
template <int kDim>
__device__ void normalize_chunks(uint4& lo, uint4& hi, const bf16* weight, int chunk, float eps) {
  if constexpr (kDim == 64 || kDim == 128) {
    float a[8], b[8];
    const auto* l = reinterpret_cast<const bf16*>(&lo);
    const auto* h = reinterpret_cast<const bf16*>(&hi);
#pragma unroll
    for (int e = 0; e < 8; ++e) a[e] = __bfloat162float(l[e]), b[e] = __bfloat162float(h[e]);
    kernels::cuda::HeadRmsNorm<kDim, 8>::apply(a, b, weight, chunk, threadIdx.x % 32, eps);
    auto* lw = reinterpret_cast<bf16*>(&lo);
    auto* hw = reinterpret_cast<bf16*>(&hi);
#pragma unroll
    for (int e = 0; e < 8; ++e)
      lw[e] = __float2bfloat16_rn(a[e]), hw[e] = __float2bfloat16_rn(b[e]);
  } else {
    __trap();  // the launcher refuses a norm at other head dims
  }
}

// Split alignments of the two CTA widths (DecodeWidth).
constexpr int kNarrowSplitAlign = 64, kWideSplitAlign = 256;

// kWarps warps share a KV tile (16 tokens each); kStages tiles in a cp.async ring; splits are
// multiples of kSplitAlign tokens. FP8 caches: the ring holds staged codes, widened into the bf16
// K and V tile pair (of kComputeBufs, used in turn) the MMAs read.
template <int kHeadDim, int kNumWarps, int kKvStages, int kSplitTokens,
          KvFormat kKvFormat = KvFormat::kBF16, int kBf16Buffers = 1>
struct DecodeConfig {
  static constexpr KvFormat kFormat = kKvFormat;
  static constexpr bool kFp8 = kIsFp8<kKvFormat>;
  static constexpr int kComputeBufs = kBf16Buffers;
  static constexpr int kDim = kHeadDim;
  static constexpr int kWarps = kNumWarps;
  static constexpr int kStages = kKvStages;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kTileTokens = 16 * kWarps;  // each warp takes 16 tokens of a tile
  static constexpr int kSplitAlign = kSplitTokens;
  static constexpr bool kWide = kSplitTokens == kWideSplitAlign;
  static constexpr int kQBytes = 16 * kDim * 2;
  static constexpr int kTileBytes = kTileTokens * kDim * 2;  // one bf16 tile
  static constexpr int kStagingBytes = kFp8 ? kTileTokens * kDim : 0;
  static constexpr int kStageBytes = kFp8 ? 2 * kStagingBytes : 2 * kTileBytes;  // K and V
  static constexpr int kKvBytes =
      kStages * kStageBytes + (kFp8 ? kComputeBufs * 2 * kTileBytes : 0);
  static constexpr int kSmemBytes = kQBytes + kKvBytes;
  static constexpr bool kQInRegisters = kDim <= 128;
  // The warps' partial states, merged through the (then idle) KV stages.
  static_assert(kWarps * 16 * (kDim + 2) * 4 <= kKvBytes);
  static_assert(kSplitAlign % kTileTokens == 0);
};

// kRope: q and the new token's k arrive unrotated and the new K and V are not yet in the cache;
// the kernel rotates q into its tile, and the CTA whose split holds the new position rotates
// k, writes K and V to the cache for later steps and into its KV tile for this one.
template <typename Cfg, bool kRope>
__global__ void __launch_bounds__(Cfg::kThreads)
    flash_decode_kernel(const __grid_constant__ DecodeParams p) {
  constexpr int kDim = Cfg::kDim, kWarps = Cfg::kWarps, kStages = Cfg::kStages;
  using Tile = SwizzledRows<kDim>;
  constexpr int kHalf = Tile::kChunks / 2;  // 16-byte chunks per rotate-half
  static_assert(kHalf + Tile::kChunks <= Cfg::kThreads, "one new-token chunk per thread");
  static_assert(Cfg::kThreads % kHalf == 0, "a thread rotates one chunk index");
  extern __shared__ __align__(128) uint8_t smem[];
  const int split = blockIdx.x, kv_head = blockIdx.y, b = blockIdx.z;
  // The batch's lengths and slots, and the KV of every position but the newest, are not
  // written by the kernel before (the KV store writes q and the newest position's K and V;
  // metadata and older KV come from earlier steps, host copies or kernels that completed before
  // it started): they are read before waiting on it, overlapping its tail.
  const int seq_len = p.seq_lens[b];
  const int32_t* slots = p.kv_indices + p.kv_indptr[b];
  const int chunk = split_chunk_len(seq_len, p.num_splits, Cfg::kSplitAlign);
  const int start = split * chunk;
  if (start >= seq_len) {
    if (seq_len == 0 && split == 0) {  // nothing to attend to: zeros, not 0 / 0
      kernels::cuda::pdl_wait();
      for (int i = threadIdx.x; i < p.group * kDim; i += Cfg::kThreads) {
        p.out[(static_cast<int64_t>(b) * p.q_heads + kv_head * p.group) * kDim + i] =
            __float2bfloat16_rn(0.f);
      }
    }
    return;
  }
  const int end = min(seq_len, start + chunk);
  const int num_tiles = (end - start + Cfg::kTileTokens - 1) / Cfg::kTileTokens;
  const uint32_t q_tile = shared_address(smem);
  const uint32_t kv_stages = q_tile + Cfg::kQBytes;
  // Tile t's ring stage (K, then V), and the bf16 tiles its MMAs read: the stage itself, or
  // for FP8 the tile pair after the ring.
  auto stage_of = [&](int t) { return kv_stages + (t % kStages) * Cfg::kStageBytes; };
  auto k_tile = [&](int t) {
    return Cfg::kFp8 ? kv_stages + kStages * Cfg::kStageBytes +
                           (t % Cfg::kComputeBufs) * 2 * Cfg::kTileBytes
                     : stage_of(t);
  };
  // The slots of the next tile to copy are fetched one tile ahead, so the copies never wait
  // on the kv_indices load.
  using Gather = KvTileGather<kDim, Cfg::kTileTokens, Cfg::kThreads, Cfg::kFormat>;
  constexpr int kVOffset = Cfg::kFp8 ? Cfg::kStagingBytes : Cfg::kTileBytes;
  Gather next;
  auto fetch_slots = [&](int t) { next.fetch(slots, start + t * Cfg::kTileTokens, end); };
  auto copy_tile = [&](int t) {
    const uint32_t k = stage_of(t);
    next.copy(k, k + kVOffset, p.k_cache, p.v_cache, kv_head, p.kv_heads);
  };
  // The first kStages - 1 tiles, one cp.async group each (empty groups keep the wait counts
  // uniform); those before the tile holding the newest position go before the wait. With
  // kRope nothing before this kernel writes that position (its row is patched below), so all go.
  const int newest = seq_len - 1;  // >= start
  const bool has_newest = newest < end;
  const int newest_tile = has_newest ? (newest - start) / Cfg::kTileTokens : num_tiles;
  const int first_fresh = max(start, seq_len - p.fresh_span);
  const int fresh_tile = first_fresh < end ? (first_fresh - start) / Cfg::kTileTokens : num_tiles;
  const int first_after_wait = kRope ? num_tiles : fresh_tile;
  int t0 = 0;
  for (; t0 < kStages - 1 && t0 < first_after_wait; ++t0) {
    fetch_slots(t0);
    copy_tile(t0);
    cp_async_commit();
  }
  // kRope: the angles of the one rotate-half chunk index this thread rotates (of q and of the
  // new k) and the new token's slot; positions and the table are no kernel's output.
  constexpr int kNewChunks = kHalf + Tile::kChunks;  // new-token units: K pairs, then V chunks
  const int unit = threadIdx.x;  // < kHalf: K pair (unit, unit + kHalf); then V chunk unit - kHalf
  ChunkAngles angles;
  int64_t new_slot = 0;
  if constexpr (kRope) {
    angles.load(p.fresh.cos_sin + static_cast<int64_t>(p.fresh.positions[b]) * kDim,
                threadIdx.x % kHalf, kDim);
    if (has_newest && unit < kNewChunks) new_slot = p.fresh.out_cache_loc[b];
  }
  kernels::cuda::pdl_wait();
  // When the next kernel launches:
  // - after split wide CTAs, now: it is the merge kernel, which only waits (and may launch the
  //   GEMV after it early: merge_splits_kernel);
  // - after unsplit wide CTAs, when they have ended: the next kernel is a one-wave GEMV, placed
  //   on all SMs at once instead of filling each SM that a decode CTA leaves;
  // - after narrow CTAs, after the loop (below), late enough that the many merge CTAs do not
  //   take SMs that decode CTAs still wait for (pdl.cuh).
  // Each measured faster than the other placements: docs/perf-log/cuda-session-07.md and
  // cuda-session-09.md.
  if (Cfg::kWide && p.num_splits > 1) kernels::cuda::pdl_launch_dependents();
  // Q tile: the group's heads of this request's token as rows 0..group-1, zero rows to 16,
  // through registers (the cp.async groups are the KV tiles'); the loop's first barrier
  // publishes it.
  const bf16* q = p.q + b * p.q_token_stride + kv_head * p.group * p.q_head_stride;
  auto q_chunk = [&](int row, int ch) {
    return row < p.group ? *reinterpret_cast<const uint4*>(q + row * p.q_head_stride + ch * 8)
                         : make_uint4(0, 0, 0, 0);
  };
  // kRope: this thread's chunks of the new K (a rotate-half pair: lo | hi) or V (lo), for the
  // CTA holding the newest position.
  uint4 new_lo = make_uint4(0, 0, 0, 0), new_hi = new_lo;
  if constexpr (kRope) {
    for (int c = threadIdx.x; c < 16 * kHalf; c += Cfg::kThreads) {
      const int row = c / kHalf, ch = c % kHalf;  // ch == threadIdx.x % kHalf
      uint4 lo = q_chunk(row, ch), hi = q_chunk(row, ch + kHalf);
      if (p.fresh.q_norm != nullptr) {  // a zero row stays zero
        normalize_chunks<kDim>(lo, hi, p.fresh.q_norm, ch, p.fresh.norm_eps);
      }
      if (row < p.group) angles.rotate(lo, hi);
      *reinterpret_cast<uint4*>(smem + Tile::offset(row, ch)) = lo;
      *reinterpret_cast<uint4*>(smem + Tile::offset(row, ch + kHalf)) = hi;
    }
    if (has_newest && unit < kNewChunks) {
      const NewTokenParams& f = p.fresh;
      const int64_t cache_row = (new_slot * p.kv_heads + kv_head) * kDim;
      if (unit < kHalf) {
        const bf16* k = f.k + b * f.k_token_stride + kv_head * f.k_head_stride;
        new_lo = *reinterpret_cast<const uint4*>(k + unit * 8);
        new_hi = *reinterpret_cast<const uint4*>(k + (unit + kHalf) * 8);
        if (f.k_norm != nullptr) normalize_chunks<kDim>(new_lo, new_hi, f.k_norm, unit, f.norm_eps);
        angles.rotate(new_lo, new_hi);
        store_kv_chunk<Cfg::kFormat>(f.k_cache, cache_row + unit * 8, new_lo, p.k_scale);
        store_kv_chunk<Cfg::kFormat>(f.k_cache, cache_row + (unit + kHalf) * 8, new_hi, p.k_scale);
      } else {
        const int ch = unit - kHalf;
        const bf16* v = f.v + b * f.v_token_stride + kv_head * f.v_head_stride;
        new_lo = *reinterpret_cast<const uint4*>(v + ch * 8);
        store_kv_chunk<Cfg::kFormat>(f.v_cache, cache_row + ch * 8, new_lo, p.v_scale);
      }
    }
  } else {
    for (int c = threadIdx.x; c < 16 * Tile::kChunks; c += Cfg::kThreads) {
      const int row = c / Tile::kChunks, ch = c % Tile::kChunks;
      *reinterpret_cast<uint4*>(smem + Tile::offset(row, ch)) = q_chunk(row, ch);
    }
  }
  for (; t0 < kStages - 1; ++t0) {
    if (t0 < num_tiles) {
      fetch_slots(t0);
      copy_tile(t0);
    }
    cp_async_commit();
  }
  if (kStages - 1 < num_tiles) fetch_slots(kStages - 1);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  QFragments<kDim, 1, Cfg::kQInRegisters> qf;
  float o_tile[1][kDim / 8][4];  // one m16 row tile: the group's heads, padded
  auto& o = o_tile[0];
#pragma unroll
  for (int j = 0; j < kDim / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
  SoftmaxRows rows;
  for (int t = 0; t < num_tiles; ++t) {
    cp_async_wait<kStages - 2>();
    if constexpr (Cfg::kFp8) {
      if (Cfg::kComputeBufs == 1 && t > 0) __syncthreads();  // tile t - 1's readers are done
      const uint32_t staged = stage_of(t), k = k_tile(t);
      Gather::widen(staged, staged + kVOffset, k, k + Cfg::kTileBytes, p.k_scale, p.v_scale);
    }
    __syncthreads();  // tile t landed for everyone; stage (t - 1) % kStages is free again
    if (t + kStages - 1 < num_tiles) {
      copy_tile(t + kStages - 1);
      if (t + kStages < num_tiles) fetch_slots(t + kStages);
    }
    cp_async_commit();
    const uint32_t k = k_tile(t);
    if (kRope && t == newest_tile) {  // the new K and V row over the copy of its stale slot
      const int row = newest - start - t * Cfg::kTileTokens;
      uint8_t* k_rows = smem + (k - q_tile);
      auto put = [&](uint8_t* tile, int ch, uint4 v) {
        *reinterpret_cast<uint4*>(tile + Tile::offset(row, ch)) = v;
      };
      if (unit < kHalf) {
        put(k_rows, unit, new_lo);
        put(k_rows, unit + kHalf, new_hi);
      } else if (unit < kNewChunks) {
        put(k_rows + Cfg::kTileBytes, unit - kHalf, new_lo);
      }
      __syncthreads();
    }
    if (t == 0) qf.init(q_tile, 0, lane);
    float s_tile[1][2][4];
    auto& s = s_tile[0];
    warp_scores<kDim, 1, 2>(s_tile, qf, k, warp * 16, lane);
    const int tok0 = start + t * Cfg::kTileTokens + warp * 16 + 2 * (lane % 4);
#pragma unroll
    for (int j = 0; j < 2; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[j][e] = tok0 + 8 * j + (e & 1) < end ? s[j][e] * p.scale_log2 : -INFINITY;
      }
    }
    online_softmax_update(s, o, rows);
    warp_accumulate_pv<kDim, 1, 2>(o_tile, s_tile, k + Cfg::kTileBytes, warp * 16, lane);
  }
  cp_async_wait<0>();
  if constexpr (!Cfg::kWide) kernels::cuda::pdl_launch_dependents();
  __syncthreads();

  // Merge the warps' states through shared memory.
  quad_row_sums(rows);
  float* merge_o = reinterpret_cast<float*>(smem + Cfg::kQBytes);  // [kWarps, 16, kDim]
  float* merge_max = merge_o + kWarps * 16 * kDim;                 // [kWarps, 16]
  float* merge_sum = merge_max + kWarps * 16;                      // [kWarps, 16]
  const int g = lane / 4, tq = lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float* row_o = merge_o + (warp * 16 + g + 8 * r) * kDim + 2 * tq;
#pragma unroll
    for (int j = 0; j < kDim / 8; ++j) {
      *reinterpret_cast<float2*>(row_o + 8 * j) = make_float2(o[j][2 * r], o[j][2 * r + 1]);
    }
    if (tq == 0) {
      merge_max[warp * 16 + g + 8 * r] = rows.max[r];
      merge_sum[warp * 16 + g + 8 * r] = rows.sum[r];
    }
  }
  __syncthreads();
  // As the merge decides.
  const bool single_split = split_count(seq_len, p.num_splits, Cfg::kSplitAlign) == 1;
  for (int i = threadIdx.x; i < p.group * kDim; i += Cfg::kThreads) {
    const int row = i / kDim, d = i % kDim;
    float m = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) m = fmaxf(m, merge_max[w * 16 + row]);
    float sum = 0.f, acc = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float f = fast_exp2(merge_max[w * 16 + row] - m);
      sum += merge_sum[w * 16 + row] * f;
      acc += merge_o[(w * 16 + row) * kDim + d] * f;
    }
    const int head = kv_head * p.group + row;
    if (single_split) {
      p.out[(static_cast<int64_t>(b) * p.q_heads + head) * kDim + d] =
          __float2bfloat16_rn(acc / sum);
    } else {
      const int64_t prow = (static_cast<int64_t>(b) * p.num_splits + split) * p.q_heads + head;
      p.partial_o[prow * kDim + d] = acc / sum;
      if (d == 0) p.partial_lse[prow] = m + __log2f(sum);
    }
  }
}

struct MergeParams {
  const float* partial_o;    // [bs * num_splits * q_heads, dim]
  const float* partial_lse;  // [bs * num_splits * q_heads]
  bf16* out;                 // [bs, q_heads * dim]
  const int32_t* seq_lens;   // [bs]
  int q_heads;
  int num_splits;
  int split_align;
  int dim;
  // Launch the next kernel before the wait when the batch has at most this many non-empty
  // splits, summed over its requests (0: never).
  int early_launch_splits;
};

// Splits whose partial outputs a merge thread loads before summing them (loaded one split at a
// time, the merge cost about 0.5% of a Qwen3-30B-A3B batch-1 step at 1024 and 4096 tokens:
// docs/perf-log/2026-12-04-decode-merge.md).
constexpr int kMergeBatch = 8;

// One CTA per (q head, request): out = sum_s 2^(lse_s - max) o_s / sum_s 2^(lse_s - max).
// Requests with a single non-empty split were written by the decode kernel directly.
// (Merging in the last split CTA to finish instead, with an atomic counter per (request, KV
// head), measured slower at batch 1, twice, with narrow and with wide CTAs, even at contexts of
// one split, where the merge kernel has nothing to do: docs/perf-log/cuda-session-03.md and
// cuda-session-06.md. This kernel also keeps the GEMV after it from launching while the
// decode CTAs still hold their SMs: launched early, the GEMV's one-wave grid finds those SMs
// full and runs a second wave, or fills the SMs decode CTAs leave one by one. See pdl.cuh.)
//
// After few decode CTAs (wide ones of a short batch: early_launch_splits) it launches the next
// kernel, the attention output projection, before its wait, so that projection's blocks take
// the SMs decode leaves free and have their first weights in flight when decode ends (it then
// runs three blocks per SM to fit there: gemv.cu). Batch 1 got faster:
// docs/perf-log/cuda-session-09.md.
__global__ void merge_splits_kernel(const __grid_constant__ MergeParams p) {
  const int head = blockIdx.x, b = blockIdx.y;
  // Before the wait: pdl.cuh.
  const int n = split_count(p.seq_lens[b], p.num_splits, p.split_align);
  bool launch_early = false;
  if (p.early_launch_splits > 0) {
    int splits = 0;
    for (int r = 0; r < static_cast<int>(gridDim.y); ++r) {
      splits += split_count(p.seq_lens[r], p.num_splits, p.split_align);
    }
    launch_early = splits <= p.early_launch_splits;
  }
  if (launch_early) kernels::cuda::pdl_launch_dependents();
  // Every CTA waits, even one with nothing to merge, so this grid's completion implies the
  // decode kernel's (whose single-split outputs the next kernel reads).
  kernels::cuda::pdl_wait();
  if (!launch_early) kernels::cuda::pdl_launch_dependents();
  if (n <= 1) return;
  const int64_t row0 = static_cast<int64_t>(b) * p.num_splits * p.q_heads + head;
  // The splits' lse values, a load a thread, all at once; every warp then finds their maximum.
  __shared__ float lse[kMaxSplits];
  for (int s = threadIdx.x; s < n; s += blockDim.x) lse[s] = p.partial_lse[row0 + s * p.q_heads];
  __syncthreads();
  float m = -INFINITY;
  for (int s = threadIdx.x % 32; s < n; s += 32) m = fmaxf(m, lse[s]);
  for (int offset = 16; offset > 0; offset >>= 1) {
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
  }
  for (int d = threadIdx.x; d < p.dim; d += blockDim.x) {
    float sum = 0.f, acc = 0.f;
    // kMergeBatch splits' values loaded before any is summed, then summed in split order.
    for (int s0 = 0; s0 < n; s0 += kMergeBatch) {
      float o[kMergeBatch];
#pragma unroll
      for (int j = 0; j < kMergeBatch; ++j) {
        o[j] = s0 + j < n ? p.partial_o[(row0 + (s0 + j) * p.q_heads) * p.dim + d] : 0.f;
      }
#pragma unroll
      for (int j = 0; j < kMergeBatch; ++j) {
        if (s0 + j >= n) break;
        const float w = fast_exp2(lse[s0 + j] - m);
        sum += w;
        acc += w * o[j];
      }
    }
    p.out[(static_cast<int64_t>(b) * p.q_heads + head) * p.dim + d] =
        __float2bfloat16_rn(acc / sum);
  }
}

template <typename Cfg>
void launch_decode(const DecodeParams& p, bool rope, int batch_size, cudaStream_t stream) {
  const dim3 grid(p.num_splits, p.kv_heads, batch_size);
  kernels::cuda::launch_pdl(rope ? flash_decode_kernel<Cfg, true> : flash_decode_kernel<Cfg, false>,
                            grid, Cfg::kThreads, Cfg::kSmemBytes, stream, p);
}

template <typename Cfg>
void allow_decode_smem() {
  for (auto* kernel : {flash_decode_kernel<Cfg, false>, flash_decode_kernel<Cfg, true>}) {
    SGL_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
  }
}

// (Shared memory bounds both kRope variants, which differ only in registers.)
template <typename Cfg>
int resident_ctas_per_sm() {
  int ctas = 0;
  SGL_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &ctas, flash_decode_kernel<Cfg, false>, Cfg::kThreads, Cfg::kSmemBytes));
  return ctas;
}

// Per width and head_dim: <dim, warps, stages, split alignment>. Narrow CTAs (2 warps, 32-token
// tiles) let 4 of them share an SM at head_dim 128, so one wave covers more (request, KV head)
// pairs. Wide CTAs keep a 256-token context in flight at once. FP8 caches take the same CTA
// shapes; their narrow CTAs stage one tile fewer and widen into two bf16 tile pairs in turn (no
// second barrier a tile, and no more shared memory than bf16's), their wide ones keep the ring and
// widen into one pair (Llama-3-8B, 64 x 4096 on an H100: 12.98 ms a step against 13.16 with one
// pair, 15.14 with two pairs and three stages, which fit fewer CTAs on an SM:
// docs/perf-log/2026-12-06-fp8-kv-cache.md).
template <int kDim, int kBf16Stages, KvFormat F>
using NarrowConfig =
    std::conditional_t<kIsFp8<F>, DecodeConfig<kDim, 2, kBf16Stages - 1, kNarrowSplitAlign, F, 2>,
                       DecodeConfig<kDim, 2, kBf16Stages, kNarrowSplitAlign, F>>;
template <KvFormat F>
using Narrow64 = NarrowConfig<64, 4, F>;
template <KvFormat F>
using Narrow128 = NarrowConfig<128, 3, F>;
template <KvFormat F>
using Narrow256 = NarrowConfig<256, 3, F>;
template <KvFormat F>
using Wide64 = DecodeConfig<64, 8, 3, kWideSplitAlign, F>;
template <KvFormat F>
using Wide128 = DecodeConfig<128, 8, 3, kWideSplitAlign, F>;
template <KvFormat F>
using Wide256 = DecodeConfig<256, 4, 3, kWideSplitAlign, F>;

// Calls f(Cfg{}) with the config of (head_dim, width) for caches of format F; false for another
// head_dim.
template <KvFormat F, typename Fn>
bool with_format_config(int head_dim, DecodeWidth width, Fn&& f) {
  const bool wide = width == DecodeWidth::kWide;
  switch (head_dim) {
    case 64:
      wide ? f(Wide64<F>{}) : f(Narrow64<F>{});
      return true;
    case 128:
      wide ? f(Wide128<F>{}) : f(Narrow128<F>{});
      return true;
    case 256:
      wide ? f(Wide256<F>{}) : f(Narrow256<F>{});
      return true;
    default:
      return false;
  }
}

template <typename Fn>
bool with_config(int head_dim, DecodeWidth width, KvFormat format, Fn&& f) {
  switch (format) {
    case KvFormat::kE4M3:
      return with_format_config<KvFormat::kE4M3>(head_dim, width, f);
    case KvFormat::kE5M2:
      return with_format_config<KvFormat::kE5M2>(head_dim, width, f);
    case KvFormat::kBF16:
      break;
  }
  return with_format_config<KvFormat::kBF16>(head_dim, width, f);
}

}  // namespace

void configure_flash_decode_kernels() {
  for (const KvFormat format : {KvFormat::kBF16, KvFormat::kE4M3, KvFormat::kE5M2}) {
    for (const DecodeWidth width : {DecodeWidth::kNarrow, DecodeWidth::kWide}) {
      for (const int dim : {64, 128, 256}) {
        with_config(dim, width, format, [](auto cfg) { allow_decode_smem<decltype(cfg)>(); });
      }
    }
  }
}

bool flash_reads_kv_dtype(DType dtype) { return dtype == DType::kBF16 || is_fp8_kv(dtype); }

void check_flash_cache(const LayerKv& cache) {
  // On every launch: the dtypes only (a KvPool's K and V are contiguous and of one shape).
  SGL_CHECK(cache.k.dtype() == cache.v.dtype() && flash_reads_kv_dtype(cache.k.dtype()))
      << "flash attention: K " << dtype_name(cache.k.dtype()) << ", V "
      << dtype_name(cache.v.dtype());
}

int flash_decode_split_align(DecodeWidth width) {
  return width == DecodeWidth::kWide ? kWideSplitAlign : kNarrowSplitAlign;
}

int flash_decode_ctas_per_sm(int head_dim, DecodeWidth width, DType kv_dtype) {
  int ctas = 1;
  with_config(head_dim, width, kv_format_of(kv_dtype),
              [&](auto cfg) { ctas = resident_ctas_per_sm<decltype(cfg)>(); });
  return ctas;
}

// One thread per row: its request by binary search over qo_indptr.
__global__ void verify_rows_kernel(const int32_t* __restrict__ qo_indptr,
                                   const int32_t* __restrict__ seq_lens,
                                   const int32_t* __restrict__ kv_indptr, int bs, int rows,
                                   int32_t* __restrict__ row_seq_lens,
                                   int32_t* __restrict__ row_kv_start) {
  kernels::cuda::pdl_wait();
  kernels::cuda::pdl_launch_dependents();
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= rows) return;
  int lo = 0, hi = bs - 1;  // the last request whose first row is <= t
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (qo_indptr[mid] <= t)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int i = t - qo_indptr[lo], n = qo_indptr[lo + 1] - qo_indptr[lo];
  row_seq_lens[t] = seq_lens[lo] - n + i + 1;
  row_kv_start[t] = kv_indptr[lo];
}

void verify_rows_as_decode(const ForwardBatch& fb, int32_t* row_seq_lens, int32_t* row_kv_start,
                           backend::Stream stream) {
  if (fb.num_tokens == 0) return;
  constexpr int kThreads = 128;
  kernels::cuda::launch_pdl(
      verify_rows_kernel, dim3(static_cast<unsigned>((fb.num_tokens + kThreads - 1) / kThreads)),
      kThreads, 0, backend::cuda::native_stream(stream), fb.qo_indptr.data<int32_t>(),
      fb.seq_lens.data<int32_t>(), fb.kv_indptr.data<int32_t>(), fb.batch_size, fb.num_tokens,
      row_seq_lens, row_kv_start);
}

void flash_decode(const Tensor& q, const LayerKv& cache, const Tensor& out, const ForwardBatch& fb,
                  float scale, DecodeShape shape, const SplitKvScratch& scratch,
                  backend::Stream stream, const DecodeNewTokens* new_tokens, int fresh_span) {
  const int num_splits = shape.num_splits;
  const int batch_size = fb.batch_size;
  if (batch_size == 0) return;
  const Tensor& k_cache = cache.k;
  const Tensor& v_cache = cache.v;
  check_flash_cache(cache);
  const int q_heads = static_cast<int>(q.size(1)), kv_heads = static_cast<int>(k_cache.size(1));
  const int dim = static_cast<int>(q.size(2));
  SGL_CHECK(q_heads / kv_heads <= 16) << "flash decode takes at most 16 q heads per KV head";
  SGL_CHECK(num_splits >= 1 && num_splits <= kMaxSplits) << num_splits;
  if (num_splits > 1) {
    SGL_CHECK_LE(static_cast<int64_t>(batch_size) * num_splits * q_heads, scratch.rows)
        << "split-KV scratch too small";
  }
  DecodeParams p{static_cast<const bf16*>(q.raw()),
                 q.stride(0),
                 q.stride(1),
                 k_cache.raw(),
                 v_cache.raw(),
                 cache.scales.k,
                 cache.scales.v,
                 static_cast<bf16*>(out.raw()),
                 scratch.o,
                 scratch.lse,
                 fb.seq_lens.data<int32_t>(),
                 fb.kv_indptr.data<int32_t>(),
                 fb.kv_indices.data<int32_t>(),
                 q_heads,
                 kv_heads,
                 q_heads / kv_heads,
                 num_splits,
                 scale * kLog2e,
                 fresh_span,
                 {}};
  if (new_tokens != nullptr) {
    const DecodeNewTokens& n = *new_tokens;
    SGL_CHECK(n.k.size(0) == batch_size && n.k.dtype() == DType::kBF16 &&
              n.v.dtype() == DType::kBF16 && n.cos_sin.dtype() == DType::kF32 &&
              n.cos_sin.size(1) == dim)
        << "flash decode: new tokens k " << n.k.shape_string() << " cos_sin "
        << n.cos_sin.shape_string();
    p.fresh = {static_cast<const bf16*>(n.k.raw()),
               n.k.stride(0),
               n.k.stride(1),
               static_cast<const bf16*>(n.v.raw()),
               n.v.stride(0),
               n.v.stride(1),
               n.positions.data<int32_t>(),
               n.cos_sin.data<float>(),
               n.out_cache_loc.data<int32_t>(),
               k_cache.raw(),
               v_cache.raw(),
               nullptr,
               nullptr,
               0.f};
    if (n.qk_norm != nullptr) {
      SGL_CHECK(qk_norm_fusable(q, *n.qk_norm))
          << "flash decode: no fused q/k norm at head_dim " << dim;
      p.fresh.q_norm = static_cast<const bf16*>(n.qk_norm->q_weight.raw());
      p.fresh.k_norm = static_cast<const bf16*>(n.qk_norm->k_weight.raw());
      p.fresh.norm_eps = n.qk_norm->eps;
    }
  }
  auto native = backend::cuda::native_stream(stream);
  const bool launched = with_config(dim, shape.width, kv_format_of(k_cache.dtype()), [&](auto cfg) {
    launch_decode<decltype(cfg)>(p, new_tokens != nullptr, batch_size, native);
  });
  SGL_CHECK(launched) << "flash decode: head_dim " << dim;
  if (num_splits > 1) {
    const MergeParams m{scratch.o,
                        scratch.lse,
                        p.out,
                        p.seq_lens,
                        q_heads,
                        num_splits,
                        flash_decode_split_align(shape.width),
                        dim,
                        shape.early_launch_splits};
    kernels::cuda::launch_pdl(merge_splits_kernel, dim3(q_heads, batch_size), 128, 0, native, m);
  }
}

}  // namespace sgl::attention::cuda
