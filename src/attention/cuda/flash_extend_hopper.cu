// Extend / prefill attention for head_dim 128 on Hopper (sm_90a): flash attention on warpgroup
// MMAs. CTA = 3 warpgroups over 128 packed (token, q head) rows of one request and KV head (GQA
// packed into M, as flash_extend.cu):
//   warpgroup 0 (producer) gathers the request's KV positions through kv_indices with cp.async,
//     128 tokens a tile, into a ring of 128-byte-swizzled K and V tiles, and marks each tile
//     full once its copies landed (fenced for the async proxy);
//   warpgroups 1 and 2 (consumers) each own 64 rows: S = Q K^T (wgmma, Q and K from shared
//     memory), the causal mask and online softmax in registers, O += P V (wgmma with P from
//     registers, V read MN-major), then release the stage.
// The consumers do not wait on each other, so one's softmax runs beside the other's MMAs.
// (Persistent variants that overlap a CTA's start with the last one's tiles measured slower:
// docs/perf-log/2026-12-01-hopper-extend.md.)
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "attention/cuda/flash_extend_params.cuh"
#include "attention/cuda/online_softmax.cuh"
#include "backend/cuda/cuda_check.h"
#include "kernels/cuda/common/hopper_async.cuh"
#include "kernels/cuda/common/wgmma_bf16.cuh"
#include "kernels/cuda/hopper_features.h"

namespace sgl::attention::cuda {
namespace {

using namespace kernels::cuda::hopper;
using kernels::cuda::WgmmaBf16;

constexpr int kDim = 128;
constexpr int kRows = 128;        // packed rows a CTA (64 a consumer warpgroup)
constexpr int kTileTokens = 128;  // KV positions a stage
constexpr int kStages = 3;
constexpr int kSBlocks = kTileTokens / 8;  // n8 blocks of a score fragment
constexpr int kThreads = 384;
constexpr int kProducerRegs = 56, kConsumerRegs = 224;  // 128 x 56 + 256 x 224 <= 65536
// A [rows, 128] bf16 tile as two 64-column blocks of 128-byte rows (the wgmma SW128 layout):
// column block c at c * rows * 128 bytes, 16-byte chunk j of row r at chunk j ^ (r % 8).
constexpr int kQBytes = kRows * kDim * 2;
constexpr int kKvTileBytes = kTileTokens * kDim * 2;
constexpr int kQBlockBytes = kRows * 128, kKvBlockBytes = kTileTokens * 128;
constexpr int kStageBytes = 2 * kKvTileBytes;  // K then V
constexpr int kRingOffset = kQBytes;
constexpr int kBarrierOffset = kRingOffset + kStages * kStageBytes;
constexpr int kSmemBytes = kBarrierOffset + 2 * kStages * 8 + 1024;  // + alignment

__device__ __forceinline__ uint32_t sw128_offset(int row, int chunk, int block_bytes) {
  return static_cast<uint32_t>((chunk / 8) * block_bytes + row * 128 +
                               (((chunk % 8) ^ (row % 8)) << 4));
}

using Mma = WgmmaBf16<kTileTokens>;  // S: 64 rows x kTileTokens tokens
using MmaPv = WgmmaBf16<kDim>;       // O: 64 rows x 128 dims

// The CTA's shared memory: its Q tile, the KV ring and the ring's barriers.
struct Shared {
  uint32_t q;       // [128 rows, 128] swizzled
  uint32_t ring;    // stage s: K at ring + s * kStageBytes, V kKvTileBytes after it
  uint64_t* full;   // [kStages]: a tile landed (128 producer arrivals)
  uint64_t* empty;  // [kStages]: a tile consumed (8 consumer warps)
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)  // the wrappers below exist on sm_90a only

// Producer warpgroup: thread i copies 16-byte chunk i % 16 of rows i / 16 + 8 j of each KV tile.
// Up to kStages - 1 tiles are in flight; a tile is published (full) once its copies landed.
__device__ void produce(const ExtendParams& p, const Shared& sh, const ExtendTile& work) {
  const int tid = threadIdx.x, chunk = tid % 16, row_base = tid / 16;
  const int32_t* slots = p.kv_indices + p.kv_indptr[work.request];
  auto publish = [&](int t) {
    fence_proxy_async_shared();  // each thread its own copies, then arrives
    mbarrier_arrive(&sh.full[t % kStages]);
  };
  for (int t = 0; t < work.num_tiles; ++t) {
    int32_t slot[kTileTokens / 8];  // fetched before the waits below
#pragma unroll
    for (int j = 0; j < kTileTokens / 8; ++j) {
      const int pos = t * kTileTokens + row_base + 8 * j;
      slot[j] = pos < work.kv_end ? slots[pos] : -1;
    }
    if (t >= kStages - 1) {
      cp_async_wait<kStages - 2>();
      publish(t - (kStages - 1));
    }
    const int stage = t % kStages;
    if (t >= kStages) mbarrier_wait(&sh.empty[stage], ((t / kStages) - 1) & 1);
    const uint32_t k = sh.ring + stage * kStageBytes, v = k + kKvTileBytes;
#pragma unroll
    for (int j = 0; j < kTileTokens / 8; ++j) {
      const bool valid = slot[j] >= 0;
      const int64_t element =
          valid ? (static_cast<int64_t>(slot[j]) * p.kv_heads + work.kv_head) * kDim + chunk * 8
                : 0;
      const uint32_t off = sw128_offset(row_base + 8 * j, chunk, kKvBlockBytes);
      cp_async_16(k + off, static_cast<const __nv_bfloat16*>(p.k_cache) + element, valid);
      cp_async_16(v + off, static_cast<const __nv_bfloat16*>(p.v_cache) + element, valid);
    }
    cp_async_commit();
  }
  cp_async_wait<0>();
  for (int t = max(0, work.num_tiles - (kStages - 1)); t < work.num_tiles; ++t) publish(t);
}

// A [blocks][4] fragment (the softmax helpers' view) as the wgmma wrappers' flat array.
template <int kBlocks>
__device__ __forceinline__ float (&as_flat(float (&f)[kBlocks][4]))[4 * kBlocks] {
  return *reinterpret_cast<float(*)[4 * kBlocks]>(&f[0][0]);
}

// Consumer warpgroup `consumer` (0 or 1): rows 64 consumer .. + 63 of the CTA's 128.
__device__ void consume(const ExtendParams& p, const Shared& sh, const ExtendTile& work,
                        int consumer) {
  const int tid = threadIdx.x % 128, lane = tid % 32;
  // The warpgroup's Q rows: packed row r is (new token r / group, q head r % group).
  for (int c = tid; c < 64 * 16; c += 128) {
    const int row = 64 * consumer + c / 16, ch = c % 16, packed = work.row0 + row;
    const bool valid = packed < work.packed_rows;
    const __nv_bfloat16* src = valid ? p.q_row(work.qo_start, work.kv_head, packed) + ch * 8 : p.q;
    cp_async_16(sh.q + sw128_offset(row, ch, kQBlockBytes), src, valid);
  }
  cp_async_commit();
  cp_async_wait<0>();
  fence_proxy_async_shared();
  named_barrier(1 + consumer, 128);

  // In fragment (j, e) this thread holds row 16 (tid / 32) + lane / 4 (+ 8 for e >= 2) and
  // column 8 j + 2 (lane % 4) + (e & 1) of the warpgroup's score (64 x kTileTokens) and output
  // (64 x 128) tiles.
  const int my_row = work.row0 + 64 * consumer + 16 * (tid / 32) + lane / 4;
  const int mask_from = work.prefix + work.row0 / p.group + 1;  // every row sees KV below this
  int limit[2];
  for (int r = 0; r < 2; ++r) limit[r] = work.prefix + (my_row + 8 * r) / p.group + 1;
  const uint32_t q_wg = sh.q + 64 * consumer * 128;
  float o[16][4];
#pragma unroll
  for (int j = 0; j < 16; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
  SoftmaxRows rows;
  for (int t = 0; t < work.num_tiles; ++t) {
    const int stage = t % kStages;
    mbarrier_wait(&sh.full[stage], (t / kStages) & 1);
    const uint32_t k = sh.ring + stage * kStageBytes, v = k + kKvTileBytes;
    float s[kSBlocks][4];
#pragma unroll
    for (int j = 0; j < kSBlocks; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kDim / 16; ++ks) {
      const uint32_t in_block = (ks % 4) * 32;  // k16 slices 32 bytes apart in a row
      Mma::mma(as_flat(s), sw128_kmajor_desc(q_wg + (ks / 4) * kQBlockBytes + in_block),
               sw128_kmajor_desc(k + (ks / 4) * kKvBlockBytes + in_block));
    }
    wgmma_commit();
    wgmma_wait<0>();

    const int col0 = t * kTileTokens;
    if (col0 + kTileTokens > mask_from) {  // the causal diagonal (or the KV end) crosses this tile
      mask_and_scale(s, col0 + 2 * (lane % 4), p.scale_log2,
                     [&](int c, int r) { return c < limit[r]; });
    } else {
      scale_scores(s, p.scale_log2);
    }
    online_softmax_update(s, o, rows);
    uint32_t pa[kTileTokens / 16][4];
#pragma unroll
    for (int kk = 0; kk < kTileTokens / 16; ++kk) p_fragment(s, kk, pa[kk]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kTileTokens / 16; ++kk) {
      MmaPv::mma_rs(as_flat(o), pa[kk], sw128_mnmajor_desc(v + kk * 16 * 128, kKvBlockBytes));
    }
    wgmma_commit();
    wgmma_wait<0>();
    __syncwarp();
    if (lane == 0) mbarrier_arrive(&sh.empty[stage]);
  }

  quad_row_sums(rows);
  __nv_bfloat16* dst[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int packed = my_row + 8 * r;
    dst[r] =
        packed < work.packed_rows ? p.out_row(work.qo_start, work.kv_head, packed, kDim) : nullptr;
  }
  store_rows(o, rows, dst, lane);
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// Grid (q tiles, KV heads): CTA (x, y) takes q tile x (locate_q_tile) of KV head y.
__global__ void __launch_bounds__(kThreads, 1)
    flash_extend_hopper_kernel(const __grid_constant__ ExtendParams p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(Mma::kAccumulators == 4 * kSBlocks && MmaPv::kAccumulators == 64);
  extern __shared__ __align__(128) uint8_t smem_raw[];
  __shared__ int owner[2];                 // request, its q tile
  uint8_t* smem = aligned_ring(smem_raw);  // the swizzle repeats every 1024 bytes
  Shared sh;
  sh.q = smem_addr(smem);
  sh.ring = sh.q + kRingOffset;
  sh.full = reinterpret_cast<uint64_t*>(smem + kBarrierOffset);
  sh.empty = sh.full + kStages;
  if (threadIdx.x < 32) locate_q_tile(p, blockIdx.x, kRows, threadIdx.x, owner);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(&sh.full[s], 128);  // every producer thread
      mbarrier_init(&sh.empty[s], 8);   // a consumer warp each
    }
    fence_barrier_init();
  }
  __syncthreads();
  if (owner[0] < 0) return;
  const ExtendTile work = extend_tile(p, owner, blockIdx.y, kRows, kTileTokens);
  if (threadIdx.x < 128) {
    warpgroup_reg_dealloc<kProducerRegs>();
    produce(p, sh, work);
  } else {
    warpgroup_reg_alloc<kConsumerRegs>();
    consume(p, sh, work, threadIdx.x / 128 - 1);
  }
#else
  __trap();  // never launched: hopper_kernels_run is false for this image
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

}  // namespace

bool configure_flash_extend_hopper() {
  int device = 0;
  SGL_CUDA_CHECK(cudaGetDevice(&device));
  if (!kernels::cuda::hopper_kernels_run(device)) return false;
  SGL_CUDA_CHECK(cudaFuncSetAttribute(flash_extend_hopper_kernel,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  return true;
}

// Each request rounds its rows up to whole tiles, so (rows / tile rows + batch size) bounds the
// tile count without host metadata; CTAs past the last tile exit at once.
void launch_flash_extend_hopper(const ExtendParams& p, int num_tokens, cudaStream_t stream) {
  const int64_t rows = static_cast<int64_t>(num_tokens) * p.group;
  const dim3 grid(static_cast<unsigned>((rows + kRows - 1) / kRows + p.batch_size), p.kv_heads);
  flash_extend_hopper_kernel<<<grid, kThreads, kSmemBytes, stream>>>(p);
  SGL_CUDA_CHECK_LAUNCH();
}

}  // namespace sgl::attention::cuda
