// The Hopper GEMM's kernel and launcher (see hopper_gemm.h).
//
// CTA = 3 warpgroups. Warpgroup 0 is the producer: one thread issues TMA loads of each k-block
// (64 k) into a ring of stages, each a weight tile of 2 x 64 rows and a token tile, completing
// on the stage's `full` barrier; it waits on the stage's `empty` barrier before refilling it.
// Warpgroups 1 and 2 each own 64 weight rows: per stage, four m64nTk16 wgmmas from the
// swizzled tiles, released one k-block later (one group stays in flight); a tile whose last
// rows are padding (or past x's end) multiplies by narrower wgmmas (with_mma_width). Cluster
// x = CTAs of adjacent weight tiles that each load a slice of the shared token tile and
// multicast it to all (a stage is then refilled only once every member released it); cluster
// z = CTAs splitting k. After the last k-block the accumulators go to shared memory as a
// [tokens][128 + 4] f32 tile (the padding spreads a warp's writes over all banks), the cluster
// synchronizes, and each k-split CTA sums its share of the tile's rows over its split
// partners' tiles (distributed shared memory) and stores them.
#include <cuda.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <type_traits>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "core/alignment.h"
#include "core/check.h"
#include "kernels/cuda/common/cuda_types.cuh"
#include "kernels/cuda/common/hopper_async.cuh"
#include "kernels/cuda/common/hopper_ring.cuh"
#include "kernels/cuda/common/pdl.cuh"
#include "kernels/cuda/common/wgmma_bf16.cuh"
#include "kernels/cuda/hopper_features.h"
#include "kernels/cuda/hopper_gemm.h"
#include "kernels/cuda/hopper_gemm_plan.h"
#include "kernels/cuda/hopper_grouped_gemm.h"

namespace sgl::kernels::cuda {
namespace {

// The CTA shape and register split both Hopper GEMM kernels share (common/hopper_ring.cuh).
using namespace hopper;
constexpr int kTileRows = 2 * kHalfRows;   // weight rows per CTA
constexpr int kOutStride = kTileRows + 4;  // floats per token row of the output tile

// One CTA per SM. (Two per SM for token tiles up to 64, each with half the ring, measured
// slower: docs/perf-log/cuda-session-05.md.)
constexpr int kPipelineBudget = 200 * 1024;

template <int kTokens>
struct TileConfig {
  static constexpr int kWeightBytes = 2 * kHalfBytes;
  static constexpr int kTokenBytes = kTokens * kBlockK * 2;
  static constexpr int kStageBytes = kWeightBytes + kTokenBytes;
  static constexpr int kStages = std::min(8, kPipelineBudget / kStageBytes);
  static constexpr int kOutBytes = kTokens * kOutStride * 4;
  static constexpr int kBarrierOffset = std::max(kStages * kStageBytes, kOutBytes);
  static constexpr int kOutRowsOffset = kBarrierOffset + 2 * kStages * 8;  // grouped y rows
  static constexpr int kSmemBytes = kOutRowsOffset + kTokens * 4 + 1024;   // + alignment
};

enum class Epilogue { kStore, kSiluMul };

struct Params {
  int m;                      // tokens
  int n;                      // output columns (kSiluMul: the intermediate size I)
  int k_blocks;               // ceil(k / 64)
  int multicast;              // cluster x (HopperGemmPlan)
  const __nv_bfloat16* bias;  // [n] or nullptr (kStore)
  void* y;                    // [m, n] contiguous: bf16, or f32 when y_f32
  bool y_f32;
  HopperGroups groups;  // groups.tile_expert == nullptr: one dense problem
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

__device__ __forceinline__ void store_bf16x4(__nv_bfloat16* dst, float a, float b, float c,
                                             float d) {
  const __nv_bfloat162 lo = __floats2bfloat162_rn(a, b), hi = __floats2bfloat162_rn(c, d);
  uint2 packed;
  packed.x = *reinterpret_cast<const uint32_t*>(&lo);
  packed.y = *reinterpret_cast<const uint32_t*>(&hi);
  *reinterpret_cast<uint2*>(dst) = packed;
}

// Where a CTA sits: its k-blocks, weight rows and token tile, and the CTAs it shares the token
// tile with (cluster x: ranks group_rank0 .. + multicast - 1, this one the peer-th).
struct CtaTile {
  int kb_begin, num_kb;
  int row0, row1;  // first weight row of each consumer's half
  int token0;
  int multicast, peer;
  uint32_t group_rank0;
};

// The producer thread: fills the ring with the CTA's k-blocks. With multicast, each CTA of the
// group loads 1/multicast of the token rows into every member's stage.
template <int kTokens>
__device__ void produce(const CUtensorMap* w_map, const CUtensorMap* x_map, uint8_t* smem,
                        uint64_t* full, uint64_t* empty, const CtaTile& t) {
  using Cfg = TileConfig<kTokens>;
  const uint64_t read_once = hopper::policy_evict_first(), reread = hopper::policy_evict_last();
  const int slice_rows = kTokens / t.multicast;
  const uint16_t group_mask = static_cast<uint16_t>(((1u << t.multicast) - 1) << t.group_rank0);
  auto load_weights = [&](int i, int s) {
    uint8_t* stage = smem + s * Cfg::kStageBytes;
    hopper::mbarrier_arrive_expect_tx(&full[s], Cfg::kStageBytes);
    const int k0 = (t.kb_begin + i) * kBlockK;
    hopper::tma_load_2d(stage, w_map, &full[s], k0, t.row0, read_once);
    hopper::tma_load_2d(stage + kHalfBytes, w_map, &full[s], k0, t.row1, read_once);
  };
  auto load_tokens = [&](int i, int s) {
    uint8_t* tokens = smem + s * Cfg::kStageBytes + Cfg::kWeightBytes;
    const int k0 = (t.kb_begin + i) * kBlockK;
    if (t.multicast == 1) {
      hopper::tma_load_2d(tokens, x_map, &full[s], k0, t.token0, reread);
    } else {
      hopper::tma_load_2d_multicast(tokens + t.peer * slice_rows * 128, x_map, &full[s], k0,
                                    t.token0 + t.peer * slice_rows, group_mask, reread);
    }
  };
  // Weights are written by nobody upstream: the first stages' loads go out before the wait
  // on the previous kernel (pdl.cuh), the tokens' after it.
  const int prologue = min(Cfg::kStages, t.num_kb);
  for (int i = 0; i < prologue; ++i) load_weights(i, i);
  pdl_wait();
  for (int i = 0; i < prologue; ++i) load_tokens(i, i);
  for (int i = prologue; i < t.num_kb; ++i) {
    const int s = i % Cfg::kStages;
    // Released by both consumers of every CTA in the group: all their copies of stage s.
    hopper::mbarrier_wait(&empty[s], ((i / Cfg::kStages) - 1) & 1);
    load_weights(i, s);
    load_tokens(i, s);
  }
}

// Calls fn(std::integral_constant<int, N>) with the narrowest wgmma width N that covers a token
// tile's first `rows` tokens: a multiple of 64 on tiles of 128 or 256 tokens, kTokens on smaller
// ones. A tile's MMAs can stop there when its last rows are padding: fragment element j holds
// token (j / 4) 8 + ... (wgmma_bf16.cuh), so an N-wide MMA on the first N / 2 accumulators
// computes the first N tokens as the kTokens-wide one does, and leaves the others' alone.
template <int kTokens, typename Fn>
__device__ __forceinline__ void with_mma_width(int rows, Fn&& fn) {
  if constexpr (kTokens >= 128) {
    if (rows <= 64) return fn(std::integral_constant<int, 64>{});
  }
  if constexpr (kTokens == 256) {
    if (rows <= 128) return fn(std::integral_constant<int, 128>{});
    if (rows <= 192) return fn(std::integral_constant<int, 192>{});
  }
  fn(std::integral_constant<int, kTokens>{});
}

// A consumer warpgroup: its 64 weight rows x kTokens tokens over the ring's k-blocks, then the
// fragment into the output tile (rows = tokens, columns = the CTA's 128 weight rows). One
// k-block's MMAs stay in flight while the next is issued; a stage is released (to the
// producers of every CTA that multicasts into it) once the MMAs reading it are done. The MMAs
// cover the tile's first `rows` tokens (rounded up by with_mma_width); the accumulators of the
// others stay zero.
template <int kTokens>
__device__ void consume(uint8_t* smem, uint64_t* full, uint64_t* empty, const CtaTile& t, int half,
                        int rows) {
  using Cfg = TileConfig<kTokens>;
  using Mma = WgmmaBf16<kTokens>;
  float acc[Mma::kAccumulators];
#pragma unroll
  for (int j = 0; j < Mma::kAccumulators; ++j) acc[j] = 0.f;
  const uint32_t ring = hopper::smem_addr(smem);
  // Lane j < multicast of the warpgroup's first warp releases the stage to group member j
  // (one warp instruction for all members: a remote arrival carries a GPU-scope fence).
  const int lane_in_group = threadIdx.x % 128;
  const bool releaser = lane_in_group < t.multicast;
  auto release = [&](int s) {
    if (t.multicast == 1) {
      hopper::mbarrier_arrive(&empty[s]);
    } else {
      hopper::mbarrier_arrive_cluster(
          hopper::cluster_map(hopper::smem_addr(&empty[s]), t.group_rank0 + lane_in_group));
    }
  };
  with_mma_width<kTokens>(rows, [&](auto width) {
    using Narrow = WgmmaBf16<decltype(width)::value>;  // on acc's first Narrow::kAccumulators
    for (int i = 0; i < t.num_kb; ++i) {
      const int s = i % Cfg::kStages;
      hopper::mbarrier_wait(&full[s], (i / Cfg::kStages) & 1);
      const uint32_t w_tile = ring + s * Cfg::kStageBytes + half * kHalfBytes;
      const uint32_t x_tile = ring + s * Cfg::kStageBytes + Cfg::kWeightBytes;
      hopper::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kBlockK / 16; ++kk) {
        Narrow::mma(acc, hopper::sw128_kmajor_desc(w_tile + kk * 32),
                    hopper::sw128_kmajor_desc(x_tile + kk * 32));
      }
      hopper::wgmma_commit();
      hopper::wgmma_wait<1>();  // k-block i - 1's MMAs are done
      if (releaser && i > 0) release((i - 1) % Cfg::kStages);
    }
    hopper::wgmma_wait<0>();  // the last stage is never refilled: no release needed
  });
  // Both warpgroups are done with the ring before its memory becomes the output tile.
  hopper::named_barrier(1, 256);
  float* tile = reinterpret_cast<float*>(smem);
  const int lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4;
  const int row = half * kHalfRows + warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < Mma::kAccumulators; ++j) {
    const int token = (j / 4) * 8 + (lane % 4) * 2 + (j % 2);
    tile[token * kOutStride + row + 8 * ((j / 2) % 2)] = acc[j];
  }
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// grid (feature tiles, token tiles, splits); cluster (multicast, 1, splits). kStore: feature
// tile f is weight rows [128 f, 128 f + 128); kSiluMul: gate rows [64 f, 64 f + 64) and the up
// rows n further.
template <int kTokens, Epilogue kEpilogue>
__global__ void __launch_bounds__(kThreads, 1)
    hopper_gemm_kernel(const __grid_constant__ CUtensorMap w_map,
                       const __grid_constant__ CUtensorMap x_map, const Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Cfg = TileConfig<kTokens>;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = hopper::aligned_ring(smem_raw);
  auto* full = reinterpret_cast<uint64_t*>(smem + Cfg::kBarrierOffset);
  uint64_t* empty = full + Cfg::kStages;
  constexpr bool kSilu = kEpilogue == Epilogue::kSiluMul;
  const int splits = static_cast<int>(gridDim.z), split = static_cast<int>(blockIdx.z);
  const int peer = static_cast<int>(blockIdx.x) % p.multicast;
  const int col0 = static_cast<int>(blockIdx.x) * (kSilu ? kHalfRows : kTileRows);
  CtaTile t;
  t.kb_begin = split * p.k_blocks / splits;
  t.num_kb = (split + 1) * p.k_blocks / splits - t.kb_begin;
  t.row0 = col0;
  t.row1 = kSilu ? p.n + col0 : col0 + kHalfRows;
  t.token0 = static_cast<int>(blockIdx.y) * kTokens;
  bool real_row = false;  // grouped with row_entry: whether this thread's row of the tile is real
  if (p.groups.tile_expert != nullptr) {
    // The alignment upstream wrote the tile's expert and rows; a whole cluster shares
    // blockIdx.y, so it leaves together.
    pdl_wait();
    const int rows_used = *p.groups.rows_used, expert = p.groups.tile_expert[blockIdx.y];
    if (p.groups.row_entry != nullptr && threadIdx.x < kTokens) {
      real_row = p.groups.row_entry[t.token0 + threadIdx.x] < p.groups.entries;
    }
    if (t.token0 >= rows_used) return;
    const int expert_row0 = expert * static_cast<int>(p.groups.expert_rows);
    t.row0 += expert_row0;
    t.row1 += expert_row0;
  }
  t.multicast = p.multicast;
  t.peer = peer;
  t.group_rank0 = static_cast<uint32_t>(split * p.multicast);  // cluster rank = x + multicast z
  const int warpgroup = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    hopper::init_ring(full, empty, Cfg::kStages, 2 * p.multicast, &w_map, &x_map);
  }
  // The rows the tile's MMAs cover (with_mma_width rounds them up): its real rows, counted at
  // the barrier below (padding follows them; grouped mode never multicasts), or the rows of x
  // left.
  const int valid_tokens = min(kTokens, p.m - t.token0);
  int mma_rows = valid_tokens;
  // Peers multicast into this CTA's ring and arrive on its barriers: all are initialized first.
  if (p.multicast > 1) {
    hopper::cluster_sync();
  } else {
    const int real_rows = __syncthreads_count(real_row);
    if (p.groups.row_entry != nullptr) mma_rows = max(real_rows, 1);
  }

  // A grouped tile's y rows, read by the epilogue: one global load each, here where the other
  // producer threads idle, not a dependent load per output chunk there (measured:
  // docs/perf-log/2026-11-30-moe-kernel-costs.md).
  auto* out_rows = reinterpret_cast<int32_t*>(smem + Cfg::kOutRowsOffset);
  if (warpgroup == 0) {
    hopper::warpgroup_reg_dealloc<kProducerRegs>();
    if (threadIdx.x == 0) {
      produce<kTokens>(&w_map, &x_map, smem, full, empty, t);
    } else if (p.groups.scatter) {
      for (int i = static_cast<int>(threadIdx.x) - 1; i < valid_tokens; i += 127) {
        out_rows[i] = p.groups.row_entry[t.token0 + i];
      }
    }
  } else {
    hopper::warpgroup_reg_alloc<kConsumerRegs>();
    consume<kTokens>(smem, full, empty, t, warpgroup - 1, mma_rows);
  }

  // Every CTA's partial tile is written (and every producer has waited on the previous
  // kernel, so the grid's completion implies its predecessor's).
  __syncwarp();
  hopper::cluster_sync();
  pdl_launch_dependents();

  // This CTA's share (split-th of `splits`) of the tile's (token, 4-column chunk) items, summed
  // over the partial tiles of the CTAs at the same x in the cluster (ranks peer + multicast q).
  constexpr int kOutCols = kSilu ? kHalfRows : kTileRows;
  constexpr int kChunks = kOutCols / 4;
  const int items = valid_tokens * kChunks;
  const int first = split * items / splits, last = (split + 1) * items / splits;
  const uint32_t tile = hopper::smem_addr(smem);
  for (int item = first + threadIdx.x; item < last; item += kThreads) {
    const int tok = item / kChunks, c = (item % kChunks) * 4;
    const int col = col0 + c;
    if (col >= p.n) continue;  // n % 8 == 0: a chunk is wholly in or out
    const uint32_t at = tile + (tok * kOutStride + c) * 4;
    float4 sum = make_float4(0.f, 0.f, 0.f, 0.f), up = sum;
    for (int q = 0; q < splits; ++q) {
      const uint32_t rank = static_cast<uint32_t>(peer + q * p.multicast);
      const float4 v = hopper::cluster_load_f4(hopper::cluster_map(at, rank));
      sum = make_float4(sum.x + v.x, sum.y + v.y, sum.z + v.z, sum.w + v.w);
      if constexpr (kSilu) {
        const float4 u = hopper::cluster_load_f4(hopper::cluster_map(at + kHalfRows * 4, rank));
        up = make_float4(up.x + u.x, up.y + u.y, up.z + u.z, up.w + u.w);
      }
    }
    int64_t y_row = t.token0 + tok;
    if (p.groups.scatter) {
      y_row = out_rows[tok];
      if (y_row >= p.groups.entries) continue;  // padding
    }
    const int64_t out = y_row * p.n + col;
    if constexpr (kSilu) {
      store_bf16x4(static_cast<__nv_bfloat16*>(p.y) + out, silu_mul<__nv_bfloat16>(sum.x, up.x),
                   silu_mul<__nv_bfloat16>(sum.y, up.y), silu_mul<__nv_bfloat16>(sum.z, up.z),
                   silu_mul<__nv_bfloat16>(sum.w, up.w));
    } else {
      if (p.bias != nullptr) {
        sum.x += __bfloat162float(p.bias[col]);
        sum.y += __bfloat162float(p.bias[col + 1]);
        sum.z += __bfloat162float(p.bias[col + 2]);
        sum.w += __bfloat162float(p.bias[col + 3]);
      }
      if (p.y_f32) {
        *reinterpret_cast<float4*>(static_cast<float*>(p.y) + out) = sum;
      } else {
        store_bf16x4(static_cast<__nv_bfloat16*>(p.y) + out, sum.x, sum.y, sum.z, sum.w);
      }
    }
  }
  // No CTA leaves while another may still read its tile.
  hopper::cluster_sync();
#else
  __trap();  // never launched: hopper_kernels_run is false for this image
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

using KernelFn = void (*)(CUtensorMap, CUtensorMap, Params);

// The kernel instance for a token tile and epilogue, and the dynamic shared memory it needs.
struct KernelChoice {
  KernelFn fn;
  int smem_bytes;
};

template <int kTokens>
KernelChoice choice_for(Epilogue epilogue) {
  return {epilogue == Epilogue::kStore ? hopper_gemm_kernel<kTokens, Epilogue::kStore>
                                       : hopper_gemm_kernel<kTokens, Epilogue::kSiluMul>,
          TileConfig<kTokens>::kSmemBytes};
}

KernelChoice kernel_for(int token_tile, Epilogue epilogue) {
  return with_hopper_token_tile(token_tile,
                                [&](auto tile) { return choice_for<tile.value>(epilogue); });
}

// x: bf16 [m, k] with 16-byte aligned rows; w: bf16 [rows, k] contiguous.
bool operands_fit(const Tensor& x, const Tensor& w) {
  return x.ndim() == 2 && w.ndim() == 2 && x.dtype() == DType::kBF16 && w.dtype() == DType::kBF16 &&
         x.size(1) == w.size(1) && x.size(1) % 8 == 0 && x.stride(1) == 1 && x.stride(0) % 8 == 0 &&
         is_aligned(x.raw(), 16) && w.is_contiguous() && is_aligned(w.raw(), 16) &&
         x.size(0) >= 1 && x.size(0) <= INT32_MAX && w.size(0) <= INT32_MAX &&
         x.size(1) <= INT32_MAX;
}

}  // namespace

struct HopperGemm::Launch {
  Epilogue epilogue;
  const Tensor& x;
  const Tensor& w;
  const __nv_bfloat16* bias;
  const Tensor& y;
  int64_t feature_tiles;
  const HopperGroups* groups = nullptr;
};

HopperGemm::HopperGemm(int device_index) : device_index_(device_index) {
  available_ = hopper_kernels_run(device_index);
}

void HopperGemm::prepare() {
  if (encoder_ != nullptr) return;
  encoder_ = std::make_unique<TensorMapEncoder>();
  // Kernel attributes are per device: set them on this one, then restore the caller's.
  int previous = 0;
  SGL_CUDA_CHECK(cudaGetDevice(&previous));
  SGL_CUDA_CHECK(cudaSetDevice(device_index_));
  for (int tile : kHopperTokenTiles) {
    for (Epilogue epilogue : {Epilogue::kStore, Epilogue::kSiluMul}) {
      const KernelChoice k = kernel_for(tile, epilogue);
      SGL_CUDA_CHECK(
          cudaFuncSetAttribute(k.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, k.smem_bytes));
    }
  }
  configure_hopper_grouped_kernels();
  SGL_CUDA_CHECK(cudaSetDevice(previous));
}

bool HopperGemm::applies(const Tensor& x, const Tensor& w, const Tensor& bias,
                         const Tensor& y) const {
  return available_ && operands_fit(x, w) && w.size(0) % 8 == 0 && y.ndim() == 2 &&
         y.is_contiguous() && y.size(0) == x.size(0) && y.size(1) == w.size(0) &&
         (y.dtype() == DType::kBF16 || y.dtype() == DType::kF32) && is_aligned(y.raw(), 16) &&
         (!bias.defined() ||
          (bias.dtype() == DType::kBF16 && bias.is_contiguous() && bias.numel() == w.size(0)));
}

bool HopperGemm::applies_silu_and_mul(const Tensor& x, const Tensor& w, const Tensor& out) const {
  return available_ && operands_fit(x, w) && w.size(0) % 16 == 0 && out.ndim() == 2 &&
         out.is_contiguous() && out.dtype() == DType::kBF16 && out.size(0) == x.size(0) &&
         out.size(1) * 2 == w.size(0) && is_aligned(out.raw(), 16);
}

void HopperGemm::run(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                     backend::Stream stream) {
  SGL_CHECK(applies(x, w, bias, y)) << "hopper gemm: operands it does not take";
  const auto* b = bias.defined() ? static_cast<const __nv_bfloat16*>(bias.raw()) : nullptr;
  launch({Epilogue::kStore, x, w, b, y, (w.size(0) + kTileRows - 1) / kTileRows}, stream);
}

void HopperGemm::run_silu_and_mul(const Tensor& x, const Tensor& w, const Tensor& out,
                                  backend::Stream stream) {
  SGL_CHECK(applies_silu_and_mul(x, w, out)) << "hopper gemm: operands it does not take";
  launch({Epilogue::kSiluMul, x, w, nullptr, out, (out.size(1) + kHalfRows - 1) / kHalfRows},
         stream);
}

bool HopperGemm::applies_grouped(const Tensor& x, const Tensor& w, const HopperGroups& g,
                                 const Tensor& y) const {
  const bool tile_ok = std::find(std::begin(kHopperTokenTiles), std::end(kHopperTokenTiles),
                                 g.token_tile) != std::end(kHopperTokenTiles);
  return available_ && tile_ok && operands_fit(x, w) && x.is_contiguous() &&
         x.size(0) % g.token_tile == 0 && g.tile_expert != nullptr && g.rows_used != nullptr &&
         g.expert_rows >= 1 && w.size(0) % g.expert_rows == 0 && g.expert_rows % 8 == 0 &&
         (!g.scatter || g.row_entry != nullptr) && y.ndim() == 2 && y.is_contiguous() &&
         is_aligned(y.raw(), 16) && y.size(0) <= INT32_MAX;
}

void HopperGemm::run_grouped(const Tensor& x, const Tensor& w, const HopperGroups& g,
                             const Tensor& y, backend::Stream stream) {
  SGL_CHECK(applies_grouped(x, w, g, y) && y.size(1) == g.expert_rows &&
            (y.dtype() == DType::kBF16 || y.dtype() == DType::kF32) &&
            y.size(0) == (g.scatter ? g.entries : x.size(0)))
      << "hopper gemm: grouped operands it does not take";
  launch({Epilogue::kStore, x, w, nullptr, y, (g.expert_rows + kTileRows - 1) / kTileRows, &g},
         stream);
}

void HopperGemm::run_grouped_silu_and_mul(const Tensor& x, const Tensor& w, const HopperGroups& g,
                                          const Tensor& out, backend::Stream stream) {
  SGL_CHECK(applies_grouped(x, w, g, out) && !g.scatter && out.dtype() == DType::kBF16 &&
            out.size(0) == x.size(0) && out.size(1) * 2 == g.expert_rows)
      << "hopper gemm: grouped operands it does not take";
  launch({Epilogue::kSiluMul, x, w, nullptr, out, (out.size(1) + kHalfRows - 1) / kHalfRows, &g},
         stream);
}

int HopperGemm::resident_clusters(int token_tile, int multicast, int splits) {
  const auto key = std::make_tuple(token_tile, multicast, splits);
  if (auto it = resident_.find(key); it != resident_.end()) return it->second;
  const KernelChoice k = kernel_for(token_tile, Epilogue::kStore);
  const dim3 cluster(static_cast<unsigned>(multicast), 1, static_cast<unsigned>(splits));
  cudaLaunchAttribute attribute = cluster_dims_attribute(cluster);
  cudaLaunchConfig_t config = {};
  config.gridDim = cluster;
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = k.smem_bytes;
  config.attrs = &attribute;
  config.numAttrs = 1;
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, k.fn, &config) != cudaSuccess) {
    (void)cudaGetLastError();  // this cluster shape cannot be resident: never chosen
    clusters = 0;
  }
  resident_[key] = clusters;
  return clusters;
}

void HopperGemm::launch(const Launch& l, backend::Stream stream) {
  const int64_t m = l.x.size(0), k = l.x.size(1);
  const int64_t k_blocks = (k + kBlockK - 1) / kBlockK;
  HopperGemmPlan plan;
  {
    std::lock_guard<std::mutex> lock(mu_);
    prepare();
    if (l.groups != nullptr) {
      // No multicast (sharing a token tile across 2 or 4 feature tiles measured slower at
      // prefill, docs/perf-log/2026-11-28-moe-hopper-grouped.md) and no k splits (the tiles
      // already fill the GPU at the sizes that take this path).
      plan.token_tile = l.groups->token_tile;
      plan.token_tiles = m / plan.token_tile;
    } else {
      plan =
          plan_hopper_gemm(m, l.feature_tiles, k_blocks, [&](int tile, int multicast, int splits) {
            return resident_clusters(tile, multicast, splits);
          });
    }
  }
  const CUtensorMap w_map = encoder_->bf16_rows_sw128(l.w.raw(), l.w.size(0), k, k, kHalfRows);
  const CUtensorMap x_map =
      encoder_->bf16_rows_sw128(l.x.raw(), m, k, l.x.stride(0), plan.token_tile / plan.multicast);
  // The persistent kernel stores 16-byte chunks: whole ones need n % 8 == 0 (a SiLU problem's
  // 2I % 8 == 0 leaves I % 8 == 4 possible; fused_moe never sends one).
  if (l.groups != nullptr && l.y.dtype() == DType::kBF16 && l.y.size(1) % 8 == 0 &&
      hopper_grouped_runs_persistent(plan.token_tile, k_blocks)) {
    const HopperGroupedLaunch grouped{.silu_mul = l.epilogue == Epilogue::kSiluMul,
                                      .token_tile = plan.token_tile,
                                      .m = static_cast<int>(m),
                                      .n = static_cast<int>(l.y.size(1)),
                                      .k_blocks = static_cast<int>(k_blocks),
                                      .feature_tiles = static_cast<int>(l.feature_tiles),
                                      .groups = *l.groups,
                                      .y = l.y.raw()};
    launch_hopper_grouped(w_map, x_map, grouped, stream);
    return;
  }
  const Params params{static_cast<int>(m),
                      static_cast<int>(l.y.size(1)),
                      static_cast<int>(k_blocks),
                      plan.multicast,
                      l.bias,
                      l.y.raw(),
                      l.y.dtype() == DType::kF32,
                      l.groups != nullptr ? *l.groups : HopperGroups{}};
  const KernelChoice kernel = kernel_for(plan.token_tile, l.epilogue);
  launch_pdl_clusters(
      kernel.fn,
      dim3(static_cast<unsigned>(l.feature_tiles), static_cast<unsigned>(plan.token_tiles),
           static_cast<unsigned>(plan.splits)),
      dim3(static_cast<unsigned>(plan.multicast), 1, static_cast<unsigned>(plan.splits)),
      dim3(kThreads), kernel.smem_bytes, backend::cuda::native_stream(stream), w_map, x_map,
      params);
}

}  // namespace sgl::kernels::cuda
