// The weight histogram of the sampling kernel's pivot search (see sampling_select.cuh): the
// block's shared memory, weight ranges, logarithmic buckets, and choosing the bucket that holds
// the last kept token. Every function is reached by all threads of the block.
#pragma once

#include <cstdint>

#include "kernels/cuda/common/block_reduce.cuh"
#include "kernels/sampling_math.h"

namespace sgl::kernels::cuda {

constexpr int kSampleThreads = 512;
constexpr int kSampleWarps = kSampleThreads / 32;
constexpr int kHistBuckets = 2048;  // linear histograms; the logarithmic one uses 1472
constexpr int kLogBuckets = (sampling_math::kWeightBits + 1) * 32;
constexpr int kBucketsPerThread = kHistBuckets / kSampleThreads;
constexpr int kCollectCap = 4096;  // tokens of one bucket sorted in shared memory
constexpr int kSegments = 64;      // id-order slices of the running-sum search
constexpr int kScanItems = 4;      // consecutive tokens per thread in the running-sum search
constexpr int kIdBits = 18;        // ids < kMaxVocab = 2^18
constexpr u64 kIdMask = (u64{1} << kIdBits) - 1;

static_assert(kHistBuckets % kSampleThreads == 0 && kLogBuckets <= kHistBuckets);
static_assert(sampling_math::kMaxVocab == (int64_t{1} << kIdBits));
static_assert(sampling_math::kWeightBits + 1 + kIdBits <= 64, "sort keys pack weight and id");

// Shared memory of one row.
struct SelectShared {
  // Bucket weights are two 32-bit words: a 64-bit shared atomicAdd is a compare-and-swap loop,
  // which crawls when many lanes hit one bucket.
  struct Histogram {
    unsigned count[kHistBuckets];
    unsigned weight_lo[kHistBuckets];
    unsigned weight_hi[kHistBuckets];
    __device__ u64 weight(int b) const { return (u64{weight_hi[b]} << 32) | weight_lo[b]; }
    // weight[b] += w with native 32-bit atomics; the low word's wrap-arounds carry into the
    // high one (the sum of a bucket stays below 2^64).
    __device__ void add(int b, unsigned n, u64 w) {
      atomicAdd(&count[b], n);
      const auto lo = static_cast<unsigned>(w), hi = static_cast<unsigned>(w >> 32);
      const unsigned old = atomicAdd(&weight_lo[b], lo);
      const unsigned carried = hi + (old + lo < old ? 1u : 0u);
      if (carried != 0) atomicAdd(&weight_hi[b], carried);
    }
  };
  union {
    Histogram hist;
    u64 keys[kCollectCap];  // (weight << 18) | (kIdMask - id): descending = the ranking
  };
  u64 segment_weight[kSegments];
  int pivot_bucket;
  unsigned collected;
  u64 above_count, above_weight, bucket_count;  // of the pivot bucket
  int found_segment;
  u64 segment_base, target;
  int32_t found;
};

// A range of candidate weights [lo, lo + width) and what is ranked before it.
struct WeightRange {
  u64 lo, width;
  u64 count;         // candidates inside
  u64 above_count;   // candidates ranked before the range (heavier)
  u64 above_weight;  // and their weight
};

// The last kept token: kept = weight > w, or weight == w and id <= id.
struct Pivot {
  u64 weight;
  int32_t id;
};

// Bucket of a weight >= 1 on a log scale: the exponent and the next 5 bits; monotone.
__device__ __forceinline__ int log_bucket(u64 w) {
  const int e = 63 - __clzll(static_cast<long long>(w));
  const u64 mantissa = e >= 5 ? (w >> (e - 5)) & 31 : (w << (5 - e)) & 31;
  return e * 32 + static_cast<int>(mantissa);
}

// The weights [lo, lo + width) of a log bucket.
__device__ __forceinline__ void log_bucket_range(int bucket, u64& lo, u64& width) {
  const int e = bucket / 32;
  const u64 lead = 32 + static_cast<u64>(bucket % 32);
  lo = e >= 5 ? lead << (e - 5) : lead >> (5 - e);
  width = e >= 5 ? u64{1} << (e - 5) : 1;
}

__device__ inline void clear_histogram(SelectShared& sh, int buckets) {
  for (int b = threadIdx.x; b < buckets; b += kSampleThreads) {
    sh.hist.count[b] = 0;
    sh.hist.weight_lo[b] = 0;
    sh.hist.weight_hi[b] = 0;
  }
  __syncthreads();
}

// Warp-cooperative: every lane calls it. A warp whose lanes all add to one bucket (tied
// logits) adds once.
__device__ inline void add_to_histogram(SelectShared& sh, bool take, int bucket, u64 w) {
  const unsigned takers = __ballot_sync(kFullWarp, take);
  if (takers == 0) return;
  if (takers == kFullWarp && __all_sync(kFullWarp, bucket == __shfl_sync(kFullWarp, bucket, 0))) {
    const u64 sum = warp_sum_of(w);
    if (threadIdx.x % 32 == 0) sh.hist.add(bucket, 32, sum);
    return;
  }
  if (take) sh.hist.add(bucket, 1, w);
}

// The pivot bucket among [0, buckets) of the histogram (higher bucket = heavier tokens): the
// lowest nonempty bucket whose heaviest token is kept. Fills r.count / above_* (adding to
// the above_* already in r) and returns the bucket.
__device__ inline int select_bucket(SelectShared& sh, int buckets, WeightRange& r, u64 rank_limit,
                                    u64 weight_limit) {
  // Thread t owns group kSampleThreads - 1 - t, so thread order runs heavy to light.
  const int group = kSampleThreads - 1 - static_cast<int>(threadIdx.x);
  u64 count = 0, weight = 0;
  for (int k = 0; k < kBucketsPerThread; ++k) {
    const int b = group * kBucketsPerThread + k;
    if (b < buckets) {
      count += sh.hist.count[b];
      weight += sh.hist.weight(b);
    }
  }
  u64 unused = 0;
  u64 above_count = r.above_count + block_exclusive_scan(count, unused);
  u64 above_weight = r.above_weight + block_exclusive_scan(weight, unused);
  int chosen = INT32_MAX;
  u64 chosen_above_count = 0, chosen_above_weight = 0, chosen_count = 0;
  for (int k = kBucketsPerThread - 1; k >= 0; --k) {
    const int b = group * kBucketsPerThread + k;
    if (b >= buckets || sh.hist.count[b] == 0) continue;
    if (above_count < rank_limit && above_weight <= weight_limit) {
      chosen = b;
      chosen_above_count = above_count;
      chosen_above_weight = above_weight;
      chosen_count = sh.hist.count[b];
    }
    above_count += sh.hist.count[b];
    above_weight += sh.hist.weight(b);
  }
  if (threadIdx.x == 0) sh.pivot_bucket = INT32_MAX;
  __syncthreads();
  if (chosen != INT32_MAX) atomicMin(&sh.pivot_bucket, chosen);
  __syncthreads();
  if (chosen == sh.pivot_bucket) {
    sh.above_count = chosen_above_count;
    sh.above_weight = chosen_above_weight;
    sh.bucket_count = chosen_count;
  }
  __syncthreads();
  const int pivot = sh.pivot_bucket;
  r.count = sh.bucket_count;
  r.above_count = sh.above_count;
  r.above_weight = sh.above_weight;
  __syncthreads();
  return pivot;
}

}  // namespace sgl::kernels::cuda
