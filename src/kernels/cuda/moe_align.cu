// CUDA moe_align_block_size: one CTA counts the (token, slot) pairs per expert in shared memory,
// scans the padded counts and scatters the flat indices, all on the device (no host round trip,
// fixed launch shape: capturable in a CUDA graph).
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "core/check.h"
#include "kernels/cuda/common/block_reduce.cuh"
#include "kernels/cuda/common/pdl.cuh"
#include "kernels/cuda/cuda_moe.h"
#include "kernels/cuda/moe_kernels.h"

namespace sgl::kernels::cuda {
namespace {

constexpr int kMaxThreads = 1024;
// A decode step's few entries take a smaller block: its barriers and scans are cheaper.
constexpr int kSmallThreads = 256;
constexpr int64_t kSmallEntries = 4096;
constexpr int64_t kMaxExperts = 8192;  // one i32 per expert in 32 KB of shared memory

// Adds one to counter[id] for every valid lane, one shared-memory atomic per distinct id in the
// warp (routing often sends most of a warp's entries to a few experts). Returns the counter's
// value before this lane's own increment. All 32 lanes call it; invalid lanes pass id = -1.
__device__ __forceinline__ int32_t warp_aggregated_increment(int32_t* counter, int32_t id,
                                                             bool valid) {
  const int lane = threadIdx.x % 32;
  const unsigned peers = __match_any_sync(kFullWarp, id);
  const int leader = __ffs(peers) - 1;
  int32_t base = 0;
  if (valid && lane == leader) base = atomicAdd(&counter[id], __popc(peers));
  base = __shfl_sync(kFullWarp, base, leader);
  return base + __popc(peers & ((1u << lane) - 1u));
}

__global__ void __launch_bounds__(kMaxThreads)
    moe_align_kernel(const int32_t* __restrict__ ids, int32_t entries, int32_t experts,
                     int64_t block_size, MoeAlignOut out) {
  extern __shared__ int32_t cursor[];  // [experts]: counts, then write positions
  pdl_wait();
  pdl_launch_dependents();
  const int tid = threadIdx.x, threads = blockDim.x;
  for (int e = tid; e < experts; e += threads) cursor[e] = 0;
  __syncthreads();

  // Every lane of a warp runs the same iterations (warp_aggregated_increment needs all 32).
  for (int64_t first = 0; first < entries; first += threads) {
    const int64_t i = first + tid;
    const int32_t id = i < entries ? ids[i] : -1;
    if (id < -1 || id >= experts) __trap();          // an expert id out of range: a bug upstream
    warp_aggregated_increment(cursor, id, id >= 0);  // -1: a masked pair, in no group
  }
  __syncthreads();

  // Thread tid owns experts [e0, e1): their padded sizes and active flags, scanned over the block.
  const int per_thread = (experts + threads - 1) / threads;
  const int e0 = min(experts, tid * per_thread), e1 = min(experts, e0 + per_thread);
  u64 padded = 0, active = 0;
  for (int e = e0; e < e1; ++e) {
    const int64_t count = cursor[e];
    padded += (count + block_size - 1) / block_size * block_size;
    active += count > 0;
  }
  u64 total = 0, num_active = 0;
  int64_t offset = static_cast<int64_t>(block_exclusive_scan(padded, total));
  int64_t rank = static_cast<int64_t>(block_exclusive_scan(active, num_active));
  for (int e = e0; e < e1; ++e) {
    const int64_t count = cursor[e];
    const int64_t size = (count + block_size - 1) / block_size * block_size;
    out.offsets[e] = static_cast<int32_t>(offset);
    for (int64_t p = offset + count; p < offset + size; ++p) out.sorted[p] = entries;
    if (out.active != nullptr && count > 0) out.active[rank++] = e;
    cursor[e] = static_cast<int32_t>(offset);
    offset += size;
  }
  if (tid == 0) {
    out.offsets[experts] = static_cast<int32_t>(total);
    out.counters[0] = static_cast<int32_t>(total);
    if (out.active != nullptr) out.counters[1] = static_cast<int32_t>(num_active);
  }
  for (int64_t p = static_cast<int64_t>(total) + tid; p < out.sorted_size; p += threads) {
    out.sorted[p] = entries;
  }
  __syncthreads();

  // expert_ids: block b belongs to the last expert whose group starts at or before it (empty
  // groups before it share its start, and come first).
  const int64_t used_blocks = static_cast<int64_t>(total) / block_size;
  for (int64_t b = tid; b < out.expert_ids_size; b += threads) {
    int32_t expert = -1;
    if (b < used_blocks) {
      const int64_t position = b * block_size;
      int lo = 0, hi = experts - 1;  // cursor[lo] <= position always (cursor[0] == 0)
      while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (cursor[mid] <= position) {
          lo = mid;
        } else {
          hi = mid - 1;
        }
      }
      expert = lo;
    }
    out.expert_ids[b] = expert;
  }
  __syncthreads();

  for (int64_t first = 0; first < entries; first += threads) {
    const int64_t i = first + tid;
    const int32_t id = i < entries ? ids[i] : -1;
    const int32_t position = warp_aggregated_increment(cursor, id, id >= 0);
    if (id >= 0) out.sorted[position] = static_cast<int32_t>(i);
  }
}

}  // namespace

void launch_moe_align(const int32_t* topk_ids, int64_t entries, int64_t experts, int64_t block_size,
                      const MoeAlignOut& out, backend::Stream stream) {
  SGL_CHECK(experts <= kMaxExperts) << "moe_align_block_size: the CUDA kernel takes up to "
                                    << kMaxExperts << " experts, got " << experts;
  SGL_CHECK(entries < (int64_t{1} << 31)) << "moe_align_block_size: " << entries << " entries";
  const int threads =
      entries <= kSmallEntries && experts <= kSmallThreads * 4 ? kSmallThreads : kMaxThreads;
  launch_pdl(moe_align_kernel, dim3(1), dim3(threads), static_cast<size_t>(experts) * 4,
             backend::cuda::native_stream(stream), topk_ids, static_cast<int32_t>(entries),
             static_cast<int32_t>(experts), block_size, out);
}

void moe_align_block_size(const Tensor& topk_ids, int64_t num_experts, int64_t block_size,
                          const MoeAlignment& out, backend::Stream stream) {
  const MoeAlignOut where{
      .sorted = out.sorted_token_ids.data<int32_t>(),
      .sorted_size = out.sorted_token_ids.size(0),
      .expert_ids = out.expert_ids.data<int32_t>(),
      .expert_ids_size = out.expert_ids.size(0),
      .offsets = out.expert_offsets.data<int32_t>(),
      .counters = out.num_tokens_post_padded.data<int32_t>(),
  };
  launch_moe_align(topk_ids.data<int32_t>(), topk_ids.numel(), num_experts, block_size, where,
                   stream);
}

}  // namespace sgl::kernels::cuda
