// CUDA moe_align_block_size: one CTA counts the (token, slot) pairs per expert in shared memory,
// scans the padded counts and scatters the flat indices, all on the device (no host round trip,
// fixed launch shape: capturable in a CUDA graph). Long prefills, where one CTA walking every
// entry twice was slow (docs/perf-log/2026-11-30-moe-prefill-align.md), spread the entries over
// several CTAs with a scratch of per-CTA counts: one kernel counts each CTA's slice, the next has
// every CTA scan all the counts (the same offsets everywhere, and its own start inside each
// group) and scatter its slice.
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "core/check.h"
#include "kernels/cuda/common/block_reduce.cuh"
#include "kernels/cuda/common/pdl.cuh"
#include "kernels/cuda/cuda_moe.h"
#include "kernels/cuda/moe_kernels.h"
#include "kernels/cuda/moe_plan.h"

namespace sgl::kernels::cuda {
namespace {

constexpr int kMaxThreads = 1024;
// A decode step's few entries take a smaller block: its barriers and scans are cheaper.
constexpr int kSmallThreads = 256;
constexpr int64_t kSmallEntries = 4096;
constexpr int64_t kMaxExperts = 8192;  // one i32 per expert in 32 KB of shared memory
static_assert(kMoeAlignMaxSplitExperts * 8 <= 48 * 1024, "the scatter kernel's shared memory");

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

// Calls fn(id, i) for the entries i = tid, tid + threads, ... of `ids` (id -1 past the end, the
// same number of calls in every lane), kIdBatch ids loaded before the first call: one CTA walks
// every entry, and one load's latency per call made a prefill's alignment latency-bound.
constexpr int kIdBatch = 8;
template <typename Fn>
__device__ __forceinline__ void for_each_id_batch(const int32_t* __restrict__ ids, int64_t begin,
                                                  int64_t end, Fn&& fn) {
  const int64_t threads = blockDim.x, tid = threadIdx.x;
  for (int64_t first = begin; first < end; first += kIdBatch * threads) {
    int32_t id[kIdBatch];
#pragma unroll
    for (int j = 0; j < kIdBatch; ++j) {
      const int64_t i = first + j * threads + tid;
      id[j] = i < end ? ids[i] : -1;
    }
#pragma unroll
    for (int j = 0; j < kIdBatch; ++j) fn(id[j], first + j * threads + tid);
  }
}

// Counts the ids of [begin, end) per expert into count[experts] (shared, zeroed first); ids out
// of range trap (a bug upstream), -1 (a masked pair) is in no group. Ends synchronized.
__device__ void count_ids(const int32_t* __restrict__ ids, int64_t begin, int64_t end,
                          int32_t experts, int32_t* count) {
  for (int e = threadIdx.x; e < experts; e += blockDim.x) count[e] = 0;
  __syncthreads();
  // Every lane of a warp runs the same iterations (warp_aggregated_increment needs all 32).
  for_each_id_batch(ids, begin, end, [&](int32_t id, int64_t) {
    if (id < -1 || id >= experts) __trap();
    warp_aggregated_increment(count, id, id >= 0);
  });
  __syncthreads();
}

// Writes expert_ids from the groups' starts (start[e], ascending): block b belongs to the last
// expert whose group starts at or before it (empty groups before it share its start, and come
// first); -1 past `total`. The blocks b = first, first + step, ...
__device__ void write_expert_ids(const int32_t* start, int32_t experts, int64_t total,
                                 int64_t block_size, int64_t first, int64_t step,
                                 const MoeAlignOut& out) {
  const int64_t used_blocks = total / block_size;
  for (int64_t b = first; b < out.expert_ids_size; b += step) {
    int32_t expert = -1;
    if (b < used_blocks) {
      const int64_t position = b * block_size;
      int lo = 0, hi = experts - 1;  // start[lo] <= position always (start[0] == 0)
      while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (start[mid] <= position) {
          lo = mid;
        } else {
          hi = mid - 1;
        }
      }
      expert = lo;
    }
    out.expert_ids[b] = expert;
  }
}

// The experts thread tid owns in place_groups: [first, last).
struct OwnedExperts {
  int first, last;
  __device__ explicit OwnedExperts(int32_t experts) {
    const int per_thread = (experts + blockDim.x - 1) / blockDim.x;
    first = min(experts, static_cast<int>(threadIdx.x) * per_thread);
    last = min(experts, first + per_thread);
  }
};

// Lays the groups out from count[e] (shared): each group's start into start[e], and with
// several CTAs this CTA's write position inside it into cursor[e] = start + cursor[e] (cursor
// holding the entries of the CTAs before it; nullptr with one CTA). Each thread reads and writes
// only its OwnedExperts' elements, so start may be count itself, and the caller may have filled
// count and cursor just before with the same split and no barrier. CTA `me` of `ctas` writes the
// padding of the experts with e % ctas == me and its share of the tail past the total (strided
// over the grid); CTA 0 the offsets, the active list and the counters. Returns the padded
// total; ends synchronized.
__device__ u64 place_groups(const int32_t* count, int32_t* start, int32_t* cursor, int32_t experts,
                            int32_t entries, int64_t block_size, int ctas, int me,
                            const MoeAlignOut& out) {
  const OwnedExperts mine(experts);
  auto padded_size = [&](int64_t n) { return (n + block_size - 1) / block_size * block_size; };
  u64 padded = 0, active = 0;
  for (int e = mine.first; e < mine.last; ++e) {
    padded += padded_size(count[e]);
    active += count[e] > 0;
  }
  u64 total = 0, num_active = 0;
  int64_t offset = static_cast<int64_t>(block_exclusive_scan(padded, total));
  int64_t rank = static_cast<int64_t>(block_exclusive_scan(active, num_active));
  for (int e = mine.first; e < mine.last; ++e) {
    const int64_t n = count[e], size = padded_size(n);
    if (me == 0) {
      out.offsets[e] = static_cast<int32_t>(offset);
      if (out.active != nullptr && n > 0) out.active[rank++] = e;
    }
    if (e % ctas == me) {
      for (int64_t p = offset + n; p < offset + size; ++p) out.sorted[p] = entries;
    }
    if (cursor != nullptr) cursor[e] += static_cast<int32_t>(offset);
    start[e] = static_cast<int32_t>(offset);
    offset += size;
  }
  if (me == 0 && threadIdx.x == 0) {
    out.offsets[experts] = static_cast<int32_t>(total);
    out.counters[0] = static_cast<int32_t>(total);
    if (out.active != nullptr) out.counters[1] = static_cast<int32_t>(num_active);
  }
  const int64_t grid_threads = static_cast<int64_t>(ctas) * blockDim.x;
  for (int64_t p =
           static_cast<int64_t>(total) + static_cast<int64_t>(me) * blockDim.x + threadIdx.x;
       p < out.sorted_size; p += grid_threads) {
    out.sorted[p] = entries;
  }
  __syncthreads();
  return total;
}

// Writes sorted[cursor[id]++] = i for the entries i of [begin, end).
__device__ void scatter_entries(const int32_t* __restrict__ ids, int64_t begin, int64_t end,
                                int32_t* cursor, const MoeAlignOut& out) {
  for_each_id_batch(ids, begin, end, [&](int32_t id, int64_t i) {
    const int32_t position = warp_aggregated_increment(cursor, id, id >= 0);
    if (id >= 0) out.sorted[position] = static_cast<int32_t>(i);
  });
}

__global__ void __launch_bounds__(kMaxThreads)
    moe_align_kernel(const int32_t* __restrict__ ids, int32_t entries, int32_t experts,
                     int64_t block_size, MoeAlignOut out) {
  extern __shared__ int32_t cursor[];  // [experts]: counts, then group starts = write positions
  pdl_wait();
  pdl_launch_dependents();
  count_ids(ids, 0, entries, experts, cursor);
  const u64 total = place_groups(cursor, cursor, nullptr, experts, entries, block_size, 1, 0, out);
  write_expert_ids(cursor, experts, static_cast<int64_t>(total), block_size, threadIdx.x,
                   blockDim.x, out);
  __syncthreads();
  scatter_entries(ids, 0, entries, cursor, out);
}

// CTA c's slice of the entries on the several-CTA path.
__device__ __forceinline__ void cta_slice(int64_t entries, int64_t& begin, int64_t& end) {
  const int64_t per_cta = (entries + gridDim.x - 1) / gridDim.x;
  begin = min(entries, blockIdx.x * per_cta);
  end = min(entries, begin + per_cta);
}

// Several-CTA path, first kernel: cta_counts[c * experts + e] = CTA c's slice's entries of e.
__global__ void __launch_bounds__(kMaxThreads)
    moe_align_count_kernel(const int32_t* __restrict__ ids, int32_t entries, int32_t experts,
                           int32_t* __restrict__ cta_counts) {
  extern __shared__ int32_t count[];  // [experts]
  pdl_wait();
  pdl_launch_dependents();
  int64_t begin, end;
  cta_slice(entries, begin, end);
  count_ids(ids, begin, end, experts, count);
  for (int e = threadIdx.x; e < experts; e += blockDim.x) {
    cta_counts[static_cast<int64_t>(blockIdx.x) * experts + e] = count[e];
  }
}

// Several-CTA path, second kernel: every CTA sums all the counts (the same group layout in every
// CTA) and the counts of the CTAs before it (its place inside each group), writes its share of
// the layout, then scatters its slice.
__global__ void __launch_bounds__(kMaxThreads)
    moe_align_scatter_kernel(const int32_t* __restrict__ ids, int32_t entries, int32_t experts,
                             int64_t block_size, const int32_t* __restrict__ cta_counts,
                             MoeAlignOut out) {
  extern __shared__ int32_t smem[];
  int32_t* start = smem;             // [experts]: counts, then each group's start
  int32_t* cursor = smem + experts;  // [experts]: this CTA's write position in each group
  pdl_wait();
  pdl_launch_dependents();
  const int ctas = gridDim.x, me = blockIdx.x;
  const OwnedExperts mine(experts);
  for (int e = mine.first; e < mine.last; ++e) {
    int32_t count = 0, before = 0;
    for (int c = 0; c < ctas; ++c) {
      const int32_t n = cta_counts[static_cast<int64_t>(c) * experts + e];
      count += n;
      before += c < me ? n : 0;
    }
    start[e] = count;
    cursor[e] = before;
  }
  const u64 total = place_groups(start, start, cursor, experts, entries, block_size, ctas, me, out);
  write_expert_ids(start, experts, static_cast<int64_t>(total), block_size,
                   static_cast<int64_t>(me) * blockDim.x + threadIdx.x,
                   static_cast<int64_t>(ctas) * blockDim.x, out);
  int64_t begin, end;
  cta_slice(entries, begin, end);
  scatter_entries(ids, begin, end, cursor, out);
}

}  // namespace

void launch_moe_align(const int32_t* topk_ids, int64_t entries, int64_t experts, int64_t block_size,
                      const MoeAlignOut& out, backend::Stream stream) {
  SGL_CHECK(experts <= kMaxExperts) << "moe_align_block_size: the CUDA kernel takes up to "
                                    << kMaxExperts << " experts, got " << experts;
  SGL_CHECK(entries < (int64_t{1} << 31)) << "moe_align_block_size: " << entries << " entries";
  const auto s = backend::cuda::native_stream(stream);
  const int64_t ctas = moe_align_ctas(entries, experts);
  if (ctas > 1 && out.cta_counts != nullptr) {
    const auto e = static_cast<int32_t>(experts), n = static_cast<int32_t>(entries);
    launch_pdl(moe_align_count_kernel, dim3(static_cast<unsigned>(ctas)), dim3(kMaxThreads),
               static_cast<size_t>(experts) * 4, s, topk_ids, n, e, out.cta_counts);
    launch_pdl(moe_align_scatter_kernel, dim3(static_cast<unsigned>(ctas)), dim3(kMaxThreads),
               static_cast<size_t>(experts) * 8, s, topk_ids, n, e, block_size,
               static_cast<const int32_t*>(out.cta_counts), out);
    return;
  }
  const int threads =
      entries <= kSmallEntries && experts <= kSmallThreads * 4 ? kSmallThreads : kMaxThreads;
  launch_pdl(moe_align_kernel, dim3(1), dim3(threads), static_cast<size_t>(experts) * 4, s,
             topk_ids, static_cast<int32_t>(entries), static_cast<int32_t>(experts), block_size,
             out);
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
