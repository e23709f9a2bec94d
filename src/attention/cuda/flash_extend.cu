// FlashAttention-2 style extend/prefill attention over the paged KV cache on bf16 tensor cores.
// One CTA = 64 or 128 rows of one request's (new token, q head) pairs of one KV head (GQA
// packed into the MMA M dimension) x all of that request's visible KV, gathered through
// kv_indices into swizzled shared memory with cp.async; 4 warps of 16 or 32 rows each; online
// softmax in f32. head_dim 128 without a tree mask takes the Hopper kernel instead
// (flash_extend_hopper.cu: warpgroup MMAs; docs/perf-log/2026-12-01-hopper-extend.md). FP8
// caches (kv_format.cuh) are staged as codes and widened to the bf16 tiles here.
#include "attention/cuda/flash_attention.h"
#include "attention/cuda/flash_extend_params.cuh"
#include "attention/cuda/warp_attention.cuh"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"

namespace sgl::attention::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;

// kMTiles m16 row tiles per warp (more reuse each K / V fragment read from shared memory, at
// the cost of registers); KV tiles of kTileTokens tokens in a kStages cp.async ring. FP8 caches:
// the ring holds staged codes, widened into one bf16 K and V tile pair the MMAs read.
template <int kHeadDim, int kRowTiles, int kKvTileTokens, int kKvStages, bool kQInRegs,
          KvFormat kKvFormat = KvFormat::kBF16>
struct ExtendConfig {
  static constexpr KvFormat kFormat = kKvFormat;
  static constexpr bool kFp8 = kIsFp8<kKvFormat>;
  static constexpr int kDim = kHeadDim;
  static constexpr int kMTiles = kRowTiles;
  static constexpr int kTileTokens = kKvTileTokens;
  static constexpr int kStages = kKvStages;
  static constexpr int kRows = kWarps * 16 * kMTiles;  // packed (token, q head) rows per CTA
  static constexpr int kQBytes = kRows * kDim * 2;
  static constexpr int kTileBytes = kTileTokens * kDim * 2;  // one bf16 tile
  static constexpr int kStagingBytes = kFp8 ? kTileTokens * kDim : 0;
  static constexpr int kStageBytes = kFp8 ? 2 * kStagingBytes : 2 * kTileBytes;  // K and V
  static constexpr int kSmemBytes = kQBytes + kStages * kStageBytes + (kFp8 ? 2 * kTileBytes : 0);
  static constexpr bool kQInRegisters = kQInRegs;
  static constexpr int kSBlocks = kTileTokens / 8;
};

// kTree: rows also hide the new tokens their tree mask row leaves out (a separate instance,
// so causal batches run exactly the code they did).
template <typename Cfg, bool kTree>
__global__ void __launch_bounds__(kThreads)
    flash_extend_kernel(const __grid_constant__ ExtendParams p) {
  constexpr int kDim = Cfg::kDim, kMTiles = Cfg::kMTiles, kTileTokens = Cfg::kTileTokens;
  constexpr int kStages = Cfg::kStages;
  using Tile = SwizzledRows<kDim>;
  constexpr int kRowsPerCta = Cfg::kRows;
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int owner[2];  // request, its q tile
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (warp == 0) locate_q_tile(p, blockIdx.x, kRowsPerCta, lane, owner);
  __syncthreads();
  if (owner[0] < 0) return;
  const ExtendTile tile = extend_tile(p, owner, blockIdx.y, kRowsPerCta, kTileTokens);
  const int kv_head = tile.kv_head, qo_start = tile.qo_start, packed_rows = tile.packed_rows;
  const int prefix = tile.prefix, row0 = tile.row0, kv_end = tile.kv_end;
  const int num_tiles = tile.num_tiles;
  // Every row sees KV below this (a tree row only the prefix for sure: its ancestors precede it,
  // but not every token before it is one).
  const int mask_from = kTree ? prefix : prefix + row0 / p.group + 1;
  const int32_t* slots = p.kv_indices + p.kv_indptr[tile.request];
  const uint32_t q_tile = shared_address(smem);
  const uint32_t kv_stages = q_tile + Cfg::kQBytes;
  // Tile t's ring stage (K, then V), and the bf16 tiles its MMAs read: the stage itself, or
  // for FP8 the tile pair after the ring.
  auto stage_of = [&](int t) { return kv_stages + (t % kStages) * Cfg::kStageBytes; };
  auto k_tile = [&](int t) {
    return Cfg::kFp8 ? kv_stages + kStages * Cfg::kStageBytes : stage_of(t);
  };
  using Gather = KvTileGather<kDim, kTileTokens, kThreads, Cfg::kFormat>;
  constexpr int kVOffset = Cfg::kFp8 ? Cfg::kStagingBytes : Cfg::kTileBytes;
  auto load_tile = [&](int t) {
    const uint32_t k = stage_of(t);
    load_kv_tile<kDim, kTileTokens, kThreads, Cfg::kFormat>(
        k, k + kVOffset, p.k_cache, p.v_cache, slots, t * kTileTokens, kv_end, kv_head, p.kv_heads);
  };

  // Q tile: packed row r is (new token r / group, q head r % group of this KV head's group).
  for (int c = threadIdx.x; c < kRowsPerCta * Tile::kChunks; c += kThreads) {
    const int row = c / Tile::kChunks, ch = c % Tile::kChunks;
    const int packed = row0 + row;
    const bool valid = packed < packed_rows;
    const bf16* src = valid ? p.q_row(qo_start, kv_head, packed) + ch * 8 : p.q;
    cp_async_16(q_tile + Tile::offset(row, ch), src, valid);
  }
  for (int t = 0; t < kStages - 1; ++t) {
    if (t < num_tiles) load_tile(t);
    cp_async_commit();  // empty groups keep the wait counts uniform
  }

  // The warp's rows start at warp_row0; in m16 tile m this thread holds rows g and g + 8,
  // which see KV positions below limit[m][r].
  const int warp_row0 = row0 + warp * 16 * kMTiles;
  int limit[kMTiles][2];
#pragma unroll
  for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      limit[m][r] = prefix + (warp_row0 + 16 * m + lane / 4 + 8 * r) / p.group + 1;
    }
  }
  // Tree rows: bit j of a row's mask shows new token j (past the last row: all, as causal).
  uint64_t tree_bits[kMTiles][2];
  if constexpr (kTree) {
#pragma unroll
    for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int packed = warp_row0 + 16 * m + lane / 4 + 8 * r;
        tree_bits[m][r] =
            packed < packed_rows ? p.tree_mask[qo_start + packed / p.group] : ~uint64_t{0};
      }
    }
  }
  QFragments<kDim, kMTiles, Cfg::kQInRegisters> qf;
  float o[kMTiles][kDim / 8][4];
#pragma unroll
  for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
    for (int j = 0; j < kDim / 8; ++j) o[m][j][0] = o[m][j][1] = o[m][j][2] = o[m][j][3] = 0.f;
  }
  SoftmaxRows rows[kMTiles];
  for (int t = 0; t < num_tiles; ++t) {
    cp_async_wait<kStages - 2>();
    if constexpr (Cfg::kFp8) {
      if (t > 0) __syncthreads();  // every warp is done with tile t - 1's bf16 tiles
      const uint32_t staged = stage_of(t), k = k_tile(t);
      Gather::widen(staged, staged + kVOffset, k, k + Cfg::kTileBytes, p.k_scale, p.v_scale);
    }
    __syncthreads();  // tile t landed for everyone; stage (t - 1) % kStages is free again
    if (t + kStages - 1 < num_tiles) load_tile(t + kStages - 1);
    cp_async_commit();
    if (t == 0) qf.init(q_tile, warp * 16 * kMTiles, lane);
    const uint32_t k = k_tile(t);
    float s[kMTiles][Cfg::kSBlocks][4];
    warp_scores<kDim, kMTiles, Cfg::kSBlocks>(s, qf, k, 0, lane);
    const int col0 = t * kTileTokens;
    if (col0 + kTileTokens > mask_from) {  // the causal diagonal (or the KV end) crosses this tile
#pragma unroll
      for (int m = 0; m < kMTiles; ++m) {
        mask_and_scale(s[m], col0 + 2 * (lane % 4), p.scale_log2, [&](int c, int r) {
          bool shown = c < limit[m][r];
          if constexpr (kTree) {
            // A row's c - prefix stays below 64 (its index in its request); rows past the last
            // (discarded) may go further.
            shown = shown && (c < prefix || c - prefix >= 64 ||
                              ((tree_bits[m][r] >> (c - prefix)) & 1) != 0);
          }
          return shown;
        });
      }
    } else {
#pragma unroll
      for (int m = 0; m < kMTiles; ++m) scale_scores(s[m], p.scale_log2);
    }
#pragma unroll
    for (int m = 0; m < kMTiles; ++m) online_softmax_update(s[m], o[m], rows[m]);
    warp_accumulate_pv<kDim, kMTiles, Cfg::kSBlocks>(o, s, k + Cfg::kTileBytes, 0, lane);
  }
  cp_async_wait<0>();

#pragma unroll
  for (int m = 0; m < kMTiles; ++m) {
    quad_row_sums(rows[m]);
    bf16* dst[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int packed = warp_row0 + 16 * m + lane / 4 + 8 * r;
      dst[r] = packed < packed_rows ? p.out_row(qo_start, kv_head, packed, kDim) : nullptr;
    }
    store_rows(o[m], rows[m], dst, lane);
  }
}

// Launches one configuration over all q tiles (x) and KV heads (y). Each request rounds its
// rows up to whole tiles, so (rows / tile rows + batch size) bounds the tile count without host
// metadata; CTAs past the last tile exit at once.
template <typename Cfg>
void launch_extend(const ExtendParams& p, int num_tokens, cudaStream_t stream) {
  const int64_t rows = static_cast<int64_t>(num_tokens) * p.group;
  const int64_t tiles = (rows + Cfg::kRows - 1) / Cfg::kRows + p.batch_size;
  const dim3 grid(static_cast<unsigned>(tiles), p.kv_heads);
  if (p.tree_mask != nullptr) {
    flash_extend_kernel<Cfg, true><<<grid, kThreads, Cfg::kSmemBytes, stream>>>(p);
  } else {
    flash_extend_kernel<Cfg, false><<<grid, kThreads, Cfg::kSmemBytes, stream>>>(p);
  }
  SGL_CUDA_CHECK_LAUNCH();
}

template <typename Cfg>
void allow_extend_smem() {
  for (auto kernel : {flash_extend_kernel<Cfg, false>, flash_extend_kernel<Cfg, true>}) {
    SGL_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
  }
}

// Per head_dim: <dim, m16 tiles per warp, KV tile tokens, stages, Q fragments in registers>,
// for caches of format F.
template <KvFormat F>
using Extend64 = ExtendConfig<64, 2, 64, 3, true, F>;
template <KvFormat F>
using Extend128 = ExtendConfig<128, 2, 64, 2, false, F>;
template <KvFormat F>
using Extend256 = ExtendConfig<256, 1, 32, 2, false, F>;

template <KvFormat F>
void allow_format_smem() {
  allow_extend_smem<Extend64<F>>();
  allow_extend_smem<Extend128<F>>();
  allow_extend_smem<Extend256<F>>();
}

// The mma.sync kernel of head_dim `dim` for caches of format F.
template <KvFormat F>
void launch_format(const ExtendParams& p, int dim, int num_tokens, cudaStream_t stream) {
  switch (dim) {
    case 64:
      launch_extend<Extend64<F>>(p, num_tokens, stream);
      break;
    case 128:
      launch_extend<Extend128<F>>(p, num_tokens, stream);
      break;
    case 256:
      launch_extend<Extend256<F>>(p, num_tokens, stream);
      break;
    default:
      SGL_CHECK(false) << "flash extend: head_dim " << dim;
  }
}

}  // namespace

bool configure_flash_extend_kernels() {
  allow_format_smem<KvFormat::kBF16>();
  allow_format_smem<KvFormat::kE4M3>();
  allow_format_smem<KvFormat::kE5M2>();
  return configure_flash_extend_hopper();
}

void flash_extend(const Tensor& q, const LayerKv& cache, const Tensor& out, const ForwardBatch& fb,
                  float scale, backend::Stream stream, bool hopper) {
  if (fb.num_tokens == 0 || fb.batch_size == 0) return;
  check_flash_cache(cache);
  const Tensor& k_cache = cache.k;
  const int q_heads = static_cast<int>(q.size(1)), kv_heads = static_cast<int>(k_cache.size(1));
  const int dim = static_cast<int>(q.size(2)), group = q_heads / kv_heads;
  const ExtendParams p{
      static_cast<const bf16*>(q.raw()),
      q.stride(0),
      q.stride(1),
      k_cache.raw(),
      cache.v.raw(),
      cache.scales.k,
      cache.scales.v,
      static_cast<bf16*>(out.raw()),
      fb.qo_indptr.data<int32_t>(),
      fb.extend_prefix_lens.data<int32_t>(),
      fb.kv_indptr.data<int32_t>(),
      fb.kv_indices.data<int32_t>(),
      fb.tree_mask.defined() ? static_cast<const uint64_t*>(fb.tree_mask.raw()) : nullptr,
      fb.batch_size,
      q_heads,
      kv_heads,
      group,
      scale * kLog2e};
  auto native = backend::cuda::native_stream(stream);
  const KvFormat format = kv_format_of(k_cache.dtype());
  // Tree verifies (a few rows a request) keep the mma.sync kernel, which reads masks; so do FP8
  // caches (a Hopper producer widening FP8 through registers measured no faster:
  // docs/perf-log/2026-12-06-fp8-kv-cache.md).
  if (dim == 128 && hopper && p.tree_mask == nullptr && format == KvFormat::kBF16) {
    launch_flash_extend_hopper(p, fb.num_tokens, native);
    return;
  }
  switch (format) {
    case KvFormat::kE4M3:
      launch_format<KvFormat::kE4M3>(p, dim, fb.num_tokens, native);
      break;
    case KvFormat::kE5M2:
      launch_format<KvFormat::kE5M2>(p, dim, fb.num_tokens, native);
      break;
    case KvFormat::kBF16:
      launch_format<KvFormat::kBF16>(p, dim, fb.num_tokens, native);
      break;
  }
}

}  // namespace sgl::attention::cuda
