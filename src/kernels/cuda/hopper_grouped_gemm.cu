// The persistent grouped kernel (hopper_grouped_gemm.h).
//
// CTA = 3 warpgroups, as hopper_gemm.cu's (common/hopper_ring.cuh). Warpgroup 0's first thread
// issues the TMA loads of every k-block of every tile the CTA takes (tiles blockIdx.x, + gridDim.x,
// ...; feature tiles fastest, so the CTAs running at once share token tiles in L2) into one ring of
// stages. Warpgroups 1 and 2 each multiply 64 weight rows by the tile's tokens, release each stage
// once its MMAs are done, and after the tile's last k-block put their accumulators through a
// bf16 staging tile (apart from the ring, which the producer goes on filling with the next
// tile) and store it in 16-byte rows. silu_mul: warpgroup 2 holds the up rows of the features
// whose gate rows warpgroup 1 holds, in the same fragment places, so it stages bf16(up) and
// warpgroup 1 turns that into silu(gate) * up in place.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "core/check.h"
#include "kernels/cuda/common/cuda_types.cuh"
#include "kernels/cuda/common/hopper_async.cuh"
#include "kernels/cuda/common/hopper_ring.cuh"
#include "kernels/cuda/common/pdl.cuh"
#include "kernels/cuda/common/wgmma_bf16.cuh"
#include "kernels/cuda/hopper_gemm_plan.h"
#include "kernels/cuda/hopper_grouped_gemm.h"
#include "kernels/cuda/stream_gemms.h"

namespace sgl::kernels::cuda {
namespace {

using bf16 = __nv_bfloat16;

// The CTA shape and register split both Hopper GEMM kernels share (common/hopper_ring.cuh).
using namespace hopper;
constexpr int kConsumers = 256;
constexpr int kSmemLimit = 227 * 1024;  // dynamic shared memory a block may have (sm_90)
constexpr int kStagingBarrier = 1;      // named barrier of the consumers (0 is __syncthreads)

template <int kTokens>
struct GroupedConfig {
  static constexpr int kStageBytes = 2 * kHalfBytes + kTokens * kBlockK * 2;
  // The staging tile: the tile's token rows of its 128 columns (256 bytes, 16 chunks of 16
  // bytes; chunk c of row r kept at c ^ (r % 8), so that a warp's fragment writes and a row's
  // chunk reads spread over the banks).
  static constexpr int kStagingBytes = kTokens * 2 * kHalfRows * 2;
  static constexpr int kRowsBytes = kTokens * 4;   // the tile's y rows (i32)
  static constexpr int kBarrierBytes = 2 * 8 * 8;  // full and empty, up to 8 stages
  static constexpr int kStages =
      std::min(8, (kSmemLimit - kStagingBytes - kRowsBytes - kBarrierBytes - 1024) / kStageBytes);
  static constexpr int kStagingOffset = kStages * kStageBytes;
  static constexpr int kRowsOffset = kStagingOffset + kStagingBytes;
  static constexpr int kBarrierOffset = kRowsOffset + kRowsBytes;
  static constexpr int kSmemBytes = kBarrierOffset + kBarrierBytes + 1024;  // + alignment
  static_assert(kTokens <= kHopperGroupedMaxTokenTile && kStages >= 3 && kSmemBytes <= kSmemLimit);
};

// The staging tile's element (row, col): 128 bf16 a row, 16-byte chunks swizzled by the row.
__host__ __device__ constexpr int staging_index(int row, int col) {
  return row * 2 * kHalfRows + (((col / 8) ^ (row % 8)) * 8) + col % 8;
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// Pins the accumulators in place across this point: the compiler may not move their reads
// (the epilogue's conversions) or writes (the next tile's zeros) into the MMAs' flight, which
// ptxas answers by serializing every wgmma.
template <int kCount>
__device__ __forceinline__ void fence_accumulators(float (&acc)[kCount]) {
#pragma unroll
  for (int j = 0; j < kCount; ++j) asm volatile("" : "+f"(acc[j])::"memory");
}

// The tile's (feature tile, token tile) for this CTA's i-th tile.
struct GroupedTile {
  int feature_tile, token_tile;
  __device__ GroupedTile(int tile, int feature_tiles)
      : feature_tile(tile % feature_tiles), token_tile(tile / feature_tiles) {}
};

template <int kTokens, bool kSilu>
__device__ void produce_tiles(const CUtensorMap* w_map, const CUtensorMap* x_map,
                              const HopperGroupedLaunch& p, int tiles, uint8_t* smem,
                              uint64_t* full, uint64_t* empty) {
  using Cfg = GroupedConfig<kTokens>;
  constexpr int kFeatureRows = kSilu ? kHalfRows : 2 * kHalfRows;
  const uint64_t read_once = hopper::policy_evict_first(), reread = hopper::policy_evict_last();
  uint32_t g = 0;  // k-blocks issued so far, over all tiles
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const GroupedTile at(tile, p.feature_tiles);
    const int expert_row0 =
        p.groups.tile_expert[at.token_tile] * static_cast<int>(p.groups.expert_rows);
    const int col0 = at.feature_tile * kFeatureRows;
    const int row0 = expert_row0 + col0;
    const int row1 = expert_row0 + (kSilu ? p.n + col0 : col0 + kHalfRows);
    const int token0 = at.token_tile * kTokens;
    for (int kb = 0; kb < p.k_blocks; ++kb, ++g) {
      const int s = static_cast<int>(g % Cfg::kStages);
      // Released by both consumers (their MMAs of the k-block kStages back are done).
      if (g >= Cfg::kStages) hopper::mbarrier_wait(&empty[s], ((g / Cfg::kStages) - 1) & 1);
      uint8_t* stage = smem + s * Cfg::kStageBytes;
      hopper::mbarrier_arrive_expect_tx(&full[s], Cfg::kStageBytes);
      const int k0 = kb * kBlockK;
      hopper::tma_load_2d(stage, w_map, &full[s], k0, row0, read_once);
      hopper::tma_load_2d(stage + kHalfBytes, w_map, &full[s], k0, row1, read_once);
      hopper::tma_load_2d(stage + 2 * kHalfBytes, x_map, &full[s], k0, token0, reread);
    }
  }
}

// half: which 64 weight rows of the tile (silu_mul: 0 gate, 1 up).
template <int kTokens, bool kSilu>
__device__ void consume_tiles(const HopperGroupedLaunch& p, int tiles, uint8_t* smem,
                              uint64_t* full, uint64_t* empty, int half) {
  using Cfg = GroupedConfig<kTokens>;
  using Mma = WgmmaBf16<kTokens>;
  constexpr int kFeatureRows = kSilu ? kHalfRows : 2 * kHalfRows;
  constexpr int kChunks = kFeatureRows / 8;  // 16-byte chunks of a staged row
  constexpr int kItems = (kTokens * kChunks + kConsumers - 1) / kConsumers;
  const int consumer = static_cast<int>(threadIdx.x) - 128;
  const int lane = consumer % 32, warp = (consumer / 32) % 4;
  const bool releaser = consumer % 128 == 0;  // one arrival per warpgroup and stage
  const uint32_t ring = hopper::smem_addr(smem);
  auto* staging = reinterpret_cast<bf16*>(smem + Cfg::kStagingOffset);
  auto* tile_rows = reinterpret_cast<int32_t*>(smem + Cfg::kRowsOffset);  // [kTokens]: y rows
  auto* y = static_cast<bf16*>(p.y);
  // Fragment element j of this thread: token (j / 4) 8 + 2 (lane % 4) + j % 2, weight row
  // 16 warp + lane / 4 + 8 ((j / 2) % 2) of the warpgroup's 64. The swizzle repeats every 8
  // token rows, so element j sits at one of four per-thread bases (by j % 4) plus (j / 4) 8
  // rows. (Computed per element, the compiler kept up to 64 staging addresses live across the
  // tile loop and spilled them: 624 bytes in the 128-token plain-store instance.)
  int staging_base[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    staging_base[e] = staging_index((lane % 4) * 2 + e % 2, (kSilu ? 0 : half * kHalfRows) +
                                                                warp * 16 + lane / 4 + 8 * (e / 2));
  }
  auto staged = [&](int j) -> bf16& {
    return staging[staging_base[j % 4] + (j / 4) * 8 * 2 * kHalfRows];
  };
  uint32_t g = 0;  // k-blocks consumed so far, over all tiles
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const GroupedTile at(tile, p.feature_tiles);
    const int token0 = at.token_tile * kTokens, col0 = at.feature_tile * kFeatureRows;
    // The y row of the tile's token `consumer`, loaded now so that the main loop hides the
    // latency, and shared through tile_rows with the threads that store its chunks: one
    // register a thread beside the accumulators, not one per store item (up to 8).
    int32_t y_row = token0 + consumer;
    if (p.groups.scatter && consumer < kTokens) y_row = p.groups.row_entry[y_row];
    float acc[Mma::kAccumulators];
#pragma unroll
    for (int j = 0; j < Mma::kAccumulators; ++j) acc[j] = 0.f;
    fence_accumulators(acc);
    for (int kb = 0; kb < p.k_blocks; ++kb, ++g) {
      const int s = static_cast<int>(g % Cfg::kStages);
      hopper::mbarrier_wait(&full[s], (g / Cfg::kStages) & 1);
      const uint32_t w_tile = ring + s * Cfg::kStageBytes + half * kHalfBytes;
      const uint32_t x_tile = ring + s * Cfg::kStageBytes + 2 * kHalfBytes;
      hopper::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kBlockK / 16; ++kk) {
        Mma::mma(acc, hopper::sw128_kmajor_desc(w_tile + kk * 32),
                 hopper::sw128_kmajor_desc(x_tile + kk * 32));
      }
      hopper::wgmma_commit();
      hopper::wgmma_wait<1>();  // k-block g - 1's MMAs are done
      if (releaser && kb > 0) hopper::mbarrier_arrive(&empty[(g - 1) % Cfg::kStages]);
    }
    hopper::wgmma_wait<0>();
    fence_accumulators(acc);
    if (releaser) hopper::mbarrier_arrive(&empty[(g - 1) % Cfg::kStages]);

    // The last tile's stores have read the staging tile and tile_rows.
    hopper::named_barrier(kStagingBarrier, kConsumers);
    if (consumer < kTokens) tile_rows[consumer] = y_row;
    if constexpr (kSilu) {
      if (half == 1) {
#pragma unroll
        for (int j = 0; j < Mma::kAccumulators; ++j) staged(j) = __float2bfloat16_rn(acc[j]);
      }
      hopper::named_barrier(kStagingBarrier, kConsumers);
      if (half == 0) {
#pragma unroll
        for (int j = 0; j < Mma::kAccumulators; ++j) {
          bf16& out = staged(j);
          out = __float2bfloat16_rn(silu_mul<bf16>(acc[j], __bfloat162float(out)));
        }
      }
    } else {
      // One copy per warpgroup, in opposite orders: with a single copy (or two the compiler
      // could merge) ptxas serialized the wgmmas (a C7514 "performance loss" note; the silu_mul
      // variant, which branches here, had none).
      if (half == 0) {
#pragma unroll
        for (int j = 0; j < Mma::kAccumulators; ++j) staged(j) = __float2bfloat16_rn(acc[j]);
      } else {
#pragma unroll
        for (int j = Mma::kAccumulators - 1; j >= 0; --j) staged(j) = __float2bfloat16_rn(acc[j]);
      }
    }
    hopper::named_barrier(kStagingBarrier, kConsumers);
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int item = consumer + i * kConsumers;
      const int token = item / kChunks, chunk = item % kChunks;
      const int col = col0 + chunk * 8;
      if (token >= kTokens || col >= p.n) continue;  // n % 8 == 0: a chunk is wholly in or out
      const int32_t row = tile_rows[token];
      if (p.groups.scatter && row >= p.groups.entries) continue;  // padding
      *reinterpret_cast<uint4*>(y + static_cast<int64_t>(row) * p.n + col) =
          *reinterpret_cast<const uint4*>(staging + staging_index(token, chunk * 8));
    }
  }
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

template <int kTokens, bool kSilu>
__global__ void __launch_bounds__(kThreads, 1)
    hopper_grouped_kernel(const __grid_constant__ CUtensorMap w_map,
                          const __grid_constant__ CUtensorMap x_map, const HopperGroupedLaunch p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Cfg = GroupedConfig<kTokens>;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = hopper::aligned_ring(smem_raw);
  auto* full = reinterpret_cast<uint64_t*>(smem + Cfg::kBarrierOffset);
  uint64_t* empty = full + Cfg::kStages;
  if (threadIdx.x == 0) hopper::init_ring(full, empty, Cfg::kStages, 2, &w_map, &x_map);
  __syncthreads();
  // The tiles' experts and the rows in use are the alignment's (upstream). The next kernel may
  // launch now: where this grid holds an SM (its shared memory and registers), the next one's
  // CTAs find no room there until this one's leave.
  pdl_wait();
  pdl_launch_dependents();
  const int tiles = *p.groups.rows_used / kTokens * p.feature_tiles;
  if (threadIdx.x < 128) {
    hopper::warpgroup_reg_dealloc<kProducerRegs>();
    if (threadIdx.x == 0) {
      produce_tiles<kTokens, kSilu>(&w_map, &x_map, p, tiles, smem, full, empty);
    }
  } else {
    hopper::warpgroup_reg_alloc<kConsumerRegs>();
    consume_tiles<kTokens, kSilu>(p, tiles, smem, full, empty, threadIdx.x / 128 - 1);
  }
#else
  __trap();  // never launched: hopper_kernels_run is false for this image
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

using GroupedKernel = void (*)(CUtensorMap, CUtensorMap, HopperGroupedLaunch);

struct GroupedChoice {
  GroupedKernel fn;
  int smem_bytes;
};

template <int kTokens>
GroupedChoice grouped_choice(bool silu_mul) {
  return {silu_mul ? hopper_grouped_kernel<kTokens, true> : hopper_grouped_kernel<kTokens, false>,
          GroupedConfig<kTokens>::kSmemBytes};
}

GroupedChoice grouped_kernel_for(int token_tile, bool silu_mul) {
  const GroupedChoice k = with_hopper_token_tile(token_tile, [&](auto tile) -> GroupedChoice {
    if constexpr (tile.value <= kHopperGroupedMaxTokenTile) {
      return grouped_choice<tile.value>(silu_mul);
    }
    return {};
  });
  // A tile past kHopperGroupedMaxTokenTile, or not one of kHopperTokenTiles.
  SGL_CHECK(k.fn != nullptr &&
            with_hopper_token_tile(token_tile, [](auto t) { return t.value; }) == token_tile)
      << "hopper grouped gemm: token tile " << token_tile;
  return k;
}

}  // namespace

void configure_hopper_grouped_kernels() {
  for (int tile : kHopperTokenTiles) {
    if (tile > kHopperGroupedMaxTokenTile) continue;
    for (bool silu_mul : {false, true}) {
      const GroupedChoice k = grouped_kernel_for(tile, silu_mul);
      SGL_CUDA_CHECK(
          cudaFuncSetAttribute(k.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, k.smem_bytes));
    }
  }
}

void launch_hopper_grouped(const CUtensorMap& w_map, const CUtensorMap& x_map,
                           const HopperGroupedLaunch& l, backend::Stream stream) {
  const GroupedChoice k = grouped_kernel_for(l.token_tile, l.silu_mul);
  const int64_t max_tiles = static_cast<int64_t>(l.m / l.token_tile) * l.feature_tiles;
  const auto ctas =
      static_cast<unsigned>(std::clamp<int64_t>(max_tiles, 1, StreamGemms::of(stream).sm_count));
  launch_pdl(k.fn, dim3(ctas), dim3(kThreads), k.smem_bytes, backend::cuda::native_stream(stream),
             w_map, x_map, l);
}

}  // namespace sgl::kernels::cuda
