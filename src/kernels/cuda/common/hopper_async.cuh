// Hopper (sm_90a) asynchronous building blocks as thin PTX wrappers: shared-memory mbarriers,
// TMA tile loads (cp.async.bulk.tensor) that complete on an mbarrier, thread-block-cluster
// barriers and distributed-shared-memory loads, warpgroup MMA control and its shared-memory
// matrix descriptors, and per-warpgroup register reallocation. Every wrapper compiles to nothing
// outside sm_90a, so callers guard their kernel bodies with __CUDA_ARCH_FEAT_SM90_ALL and the
// compute_90 PTX stays valid.
#pragma once

#include <cstdint>

namespace sgl::kernels::cuda::hopper {

// 32-bit shared-window address of a shared-memory pointer.
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// The block's dynamic shared memory from its first 1024-byte boundary (128-byte swizzled tiles,
// the period of the swizzle, want it; kernels ask for 1024 bytes more).
__device__ __forceinline__ uint8_t* aligned_ring(uint8_t* raw) {
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t{1023});
}

// ---- mbarriers ---------------------------------------------------------------------------

__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(arrivals));
}

// Makes the initialized barriers visible to the async proxy (TMA) and the cluster.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

// Arrives and announces `bytes` of TMA traffic the current phase must also wait for.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
}

// Blocks until the barrier's phase with parity `parity` has completed.
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}

// ---- TMA ---------------------------------------------------------------------------------

// Pulls a tensor map (a __grid_constant__ kernel parameter) into the descriptor cache.
__device__ __forceinline__ void prefetch_tensor_map(const void* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// L2 eviction policies for TMA loads: data read once (weights) and data many CTAs re-read.
__device__ __forceinline__ uint64_t policy_evict_first() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ uint64_t policy_evict_last() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

// Loads the box at (inner, outer) of a 2-D tensor map into shared memory at `dst`; the bytes
// count towards `bar`'s expected transaction bytes. Out-of-bounds elements arrive as zeros.
__device__ __forceinline__ void tma_load_2d(void* dst, const void* map, uint64_t* bar, int inner,
                                            int outer, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(inner), "r"(outer), "r"(smem_addr(bar)), "l"(policy)
      : "memory");
}

// The same, multicast: the box lands at `dst` (and completes on `bar`) in every CTA of the
// cluster whose rank is set in `cta_mask`.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const void* map, uint64_t* bar,
                                                      int inner, int outer, uint16_t cta_mask,
                                                      uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5, %6;" ::"r"(
          smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(inner), "r"(outer), "r"(smem_addr(bar)),
      "h"(cta_mask), "l"(policy)
      : "memory");
}

// ---- clusters ----------------------------------------------------------------------------

__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}

// Every thread of every CTA in the cluster; orders shared-memory writes before it with reads
// after it, across the cluster.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}

// The address of the same shared-memory location in CTA `rank` of the cluster.
__device__ __forceinline__ uint32_t cluster_map(uint32_t addr, uint32_t rank) {
  uint32_t mapped;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(mapped) : "r"(addr), "r"(rank));
  return mapped;
}

// Arrives on the mbarrier at `cluster_addr` (cluster_map of a barrier), in any CTA of the
// cluster. Even relaxed, ptxas precedes a remote arrival with a GPU-scope MEMBAR: issue one
// per warp instruction, not one per thread in a loop.
__device__ __forceinline__ void mbarrier_arrive_cluster(uint32_t cluster_addr) {
  asm volatile("mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0];" ::"r"(cluster_addr)
               : "memory");
}

__device__ __forceinline__ float4 cluster_load_f4(uint32_t cluster_addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(cluster_addr)
               : "memory");
  return v;
}

// ---- warpgroup MMA -----------------------------------------------------------------------

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}

// Registers per thread for the rest of the kernel, per warpgroup (all its threads call it).
template <int kRegs>
__device__ __forceinline__ void warpgroup_reg_alloc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void warpgroup_reg_dealloc() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}

// Orders this thread's earlier shared-memory writes (plain stores, completed cp.async copies)
// before later reads through the async proxy (wgmma operands, TMA stores).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// Named barrier over `threads` threads (a multiple of 32), id 1..15 (0 is __syncthreads).
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// Shared-memory matrix descriptor for a K-major tile stored as TMA writes it with 128-byte
// swizzling: rows of 64 bf16 (128 bytes), 8-row groups 1024 bytes apart, tile 1024-aligned.
// The k16 slices of a row start 32 bytes apart, so a slice's descriptor is the tile's plus
// (slice x 32 bytes) in the start-address field.
__device__ __forceinline__ uint64_t sw128_kmajor_desc(uint32_t tile_addr) {
  constexpr uint64_t kLeadingByteOffset = 16 >> 4;   // unused with swizzling; 1 by convention
  constexpr uint64_t kStrideByteOffset = 1024 >> 4;  // between 8-row groups
  constexpr uint64_t kSwizzle128B = uint64_t{1} << 62;
  return ((tile_addr & 0x3FFFF) >> 4) | (kLeadingByteOffset << 16) | (kStrideByteOffset << 32) |
         kSwizzle128B;
}

// Shared-memory matrix descriptor for an MN-major operand (rows along K, N contiguous) stored
// with 128-byte swizzling: 64-element column blocks of 128-byte rows, `block_bytes` apart, 8-row
// groups 1024 bytes apart; a k16 slice starts 16 rows (2048 bytes) after the previous one.
__device__ __forceinline__ uint64_t sw128_mnmajor_desc(uint32_t tile_addr, uint32_t block_bytes) {
  constexpr uint64_t kStrideByteOffset = 1024 >> 4;  // between 8-row (K) groups
  constexpr uint64_t kSwizzle128B = uint64_t{1} << 62;
  return ((tile_addr & 0x3FFFF) >> 4) | (uint64_t{(block_bytes >> 4) & 0x3FFF} << 16) |
         (kStrideByteOffset << 32) | kSwizzle128B;
}

}  // namespace sgl::kernels::cuda::hopper
