// Block-per-row selection for the sampling kernel: finds the last kept token of the ranking in
// sampling/sampler.h (weight descending, id ascending) without sorting the vocabulary, and finds
// a token by running sum in id order. Every function is reached by all threads of the block.
//
// The pivot search: a histogram of the candidates' weights in 1472 logarithmic buckets (with the
// count and weight of each) tells which bucket holds the last kept token, since a bucket's
// heaviest token is kept exactly when the tokens in heavier buckets number fewer than top_k and
// weigh no more than the top-p limit. If that bucket holds at most kCollectCap tokens they are
// sorted in shared memory and walked; otherwise a linear histogram of the bucket's weight range
// narrows it by 11 bits per pass (sampling_histogram.cuh), or at once to one weight value when
// its tokens are tied, whose first tokens in id order are then kept. The draw sums the kept
// weight of 64 id segments, picks the segment holding the target, and scans it.
#pragma once

#include <cstdint>

#include "kernels/cuda/common/block_reduce.cuh"
#include "kernels/cuda/common/block_sort.cuh"
#include "kernels/cuda/common/row_pass.cuh"
#include "kernels/cuda/sampling_histogram.cuh"
#include "kernels/sampling_math.h"

namespace sgl::kernels::cuda {

// One row's selection state. Weights are recomputed from the logits in every pass (the row is
// read from L2/HBM each time); a pass first compares the cheap exponent t with bounds that
// exclude the token for certain and evaluates exp only when they do not.
class RowSelector {
 public:
  __device__ RowSelector(const float* logits, int32_t vocab, float max_logit,
                         double inv_temperature, u64 min_weight, SelectShared& sh)
      : logits_(logits),
        vocab_(vocab),
        // A multiple of 32: a warp's 32 consecutive tokens never straddle two segments.
        segment_len_(((vocab + kSegments - 1) / kSegments + 31) / 32 * 32),
        max_logit_(max_logit),
        inv_temperature_(inv_temperature),
        min_weight_(min_weight),
        sh_(sh) {}

  __device__ bool is_candidate(u64 w) const { return w >= min_weight_; }  // min_weight_ >= 1
  __device__ u64 min_weight() const { return min_weight_; }
  __device__ double exponent(float x) const {
    return sampling_math::weight_exponent(x, max_logit_, inv_temperature_);
  }
  // The token's weight if it may reach w_min, else 0 (t_floor = exponent_floor(w_min)).
  __device__ u64 weight_if_above(float x, double t_floor) const {
    const double t = exponent(x);
    return t >= t_floor ? sampling_math::weight_of_exponent(t) : 0;
  }
  // Exponent bounds: weight >= w implies t >= exponent_floor(w); t >= exponent_ceiling(w)
  // implies weight >= w. The 1e-9 margin dwarfs the errors of exp_scaled and log (~1e-16).
  __device__ static double exponent_floor(u64 w) {
    return log(static_cast<double>(w)) - sampling_math::kWeightBits * 0x1.62e42fefa39efp-1 - 1e-9;
  }
  __device__ static double exponent_ceiling(u64 w) { return exponent_floor(w) + 2e-9; }

  // Pass over the row: the total weight (all tokens), the log-bucket histogram of the
  // candidates, and, when exp_sum is given, sum(exp(x - max)) for the logprobs.
  __device__ u64 histogram_all(double* exp_sum) {
    clear_histogram(sh_, kLogBuckets);
    u64 total = 0;
    double sum = 0.0;
    for_each_token<kSampleThreads>(logits_, vocab_, [&](int32_t, bool valid, float x) {
      if (exp_sum && valid) sum += static_cast<double>(expf(x - max_logit_));
      const u64 w = sampling_math::weight_of_exponent(exponent(x));  // 0 past the end (-inf)
      total += w;
      const bool take = w != 0 && is_candidate(w);
      add_to_histogram(sh_, take, take ? log_bucket(w) : 0, w);
    });
    __syncthreads();
    if (exp_sum) *exp_sum = block_sum_of(sum);
    return block_sum_of(total);
  }

  // The log bucket holding the last kept token (after histogram_all).
  __device__ WeightRange pivot_log_bucket(u64 rank_limit, u64 weight_limit) {
    WeightRange r{0, 0, 0, 0, 0};
    const int b = select_bucket(sh_, kLogBuckets, r, rank_limit, weight_limit);
    log_bucket_range(b, r.lo, r.width);
    return r;
  }

  // Narrows `r` (width > 1) by up to 11 bits with one linear-histogram pass, or to one weight
  // value at once when all its tokens weigh the same (tied logits).
  __device__ WeightRange narrow(const WeightRange& r, u64 rank_limit, u64 weight_limit) {
    const int bits = 64 - __clzll(static_cast<long long>(r.width - 1));
    const int shift = bits > 11 ? bits - 11 : 0;
    const int buckets = static_cast<int>(((r.width - 1) >> shift) + 1);
    clear_histogram(sh_, buckets);
    const double t_low = exponent_floor(r.lo), t_high = exponent_ceiling(r.lo + r.width);
    u64 heaviest = 0, lightest_complement = 0;  // max(w) and max(~w) over the range
    for_each_token<kSampleThreads>(logits_, vocab_, [&](int32_t, bool, float x) {
      const double t = exponent(x);
      const u64 w = t >= t_low && t < t_high ? sampling_math::weight_of_exponent(t) : 0;
      const bool take = w != 0 && is_candidate(w) && w >= r.lo && w - r.lo < r.width;
      if (take) {
        heaviest = w > heaviest ? w : heaviest;
        lightest_complement = ~w > lightest_complement ? ~w : lightest_complement;
      }
      add_to_histogram(sh_, take, take ? static_cast<int>((w - r.lo) >> shift) : 0, w);
    });
    __syncthreads();
    const u64 max_w = block_max_of(heaviest), min_w = ~block_max_of(lightest_complement);
    WeightRange out = r;
    if (max_w == min_w) {  // one weight value: the range's tokens are one tie group
      out.lo = max_w;
      out.width = 1;
      return out;
    }
    const int b = select_bucket(sh_, buckets, out, rank_limit, weight_limit);
    out.lo = r.lo + (static_cast<u64>(b) << shift);
    const u64 step = u64{1} << shift, left = r.lo + r.width - out.lo;
    out.width = step < left ? step : left;
    return out;
  }

  // The last kept token inside `r` (r.count <= kCollectCap): collect the range's tokens and
  // sort them. The same pass adds the tokens heavier than the range (all kept) to the segment
  // weights, and the range's kept tokens are added after the walk, so the segment weights end
  // up holding the kept weight of each id segment, ready for the draw.
  __device__ Pivot pivot_by_sorting(const WeightRange& r, u64 rank_limit, u64 weight_limit) {
    clear_segments();
    if (threadIdx.x == 0) sh_.collected = 0;
    __syncthreads();
    const int lane = static_cast<int>(threadIdx.x % 32);
    const double t_low = exponent_floor(r.lo);
    const u64 hi = r.lo + r.width;
    for_each_token<kSampleThreads>(logits_, vocab_, [&](int32_t i, bool, float x) {
      const double t = exponent(x);
      const u64 w = t >= t_low ? sampling_math::weight_of_exponent(t) : 0;
      const u64 heavier = w >= hi ? w : 0;
      if (__any_sync(kFullWarp, heavier != 0)) {
        const u64 sum = warp_sum_of(heavier);
        if (lane == 0) atomicAdd(&sh_.segment_weight[i / segment_len_], sum);  // lane 0's id
      }
      const bool take = w != 0 && w < hi && w >= r.lo && is_candidate(w);
      const unsigned takers = __ballot_sync(kFullWarp, take);
      if (takers == 0) return;
      const int leader = __ffs(takers) - 1;
      unsigned start = 0;
      if (lane == leader) start = atomicAdd(&sh_.collected, static_cast<unsigned>(__popc(takers)));
      start = __shfl_sync(kFullWarp, start, leader);
      if (take) {
        const unsigned slot = start + __popc(takers & ((1u << lane) - 1));
        sh_.keys[slot] = (w << kIdBits) | (kIdMask - static_cast<u64>(i));
      }
    });
    __syncthreads();
    const unsigned n = sh_.collected;  // == r.count
    unsigned n_pad = 1;
    while (n_pad < n) n_pad <<= 1;
    for (unsigned j = n + threadIdx.x; j < n_pad; j += kSampleThreads) sh_.keys[j] = 0;
    __syncthreads();
    block_sort_descending<kSampleThreads>(sh_.keys, n_pad);
    // Walk the ranking: position j is kept while its rank is below top_k and the weight ranked
    // before it is within the top-p limit.
    const unsigned per = (n + kSampleThreads - 1) / kSampleThreads;
    const unsigned first = threadIdx.x * per, last = first + per < n ? first + per : n;
    u64 own = 0;
    for (unsigned j = first; j < last; ++j) own += sh_.keys[j] >> kIdBits;
    u64 total = 0;
    u64 before = r.above_weight + block_exclusive_scan(own, total);
    u64 kept_end = 0;  // one past the last kept position seen by this thread
    for (unsigned j = first; j < last; ++j) {
      if (r.above_count + j < rank_limit && before <= weight_limit) kept_end = j + 1;
      before += sh_.keys[j] >> kIdBits;
    }
    const u64 kept = block_max_of(kept_end);  // >= 1: position 0 is always kept
    for (unsigned j = first; j < last && j < kept; ++j) {
      const u64 key = sh_.keys[j];
      const auto id = static_cast<int32_t>(kIdMask - (key & kIdMask));
      atomicAdd(&sh_.segment_weight[id / segment_len_], key >> kIdBits);
    }
    const u64 key = sh_.keys[kept - 1];
    __syncthreads();
    return {key >> kIdBits, static_cast<int32_t>(kIdMask - (key & kIdMask))};
  }

  // The last kept token when `r` is one weight value (r.width == 1) shared by many tokens: the
  // first j of them in id order are kept.
  __device__ Pivot pivot_in_tie(const WeightRange& r, u64 rank_limit, u64 weight_limit) {
    const u64 w = r.lo;
    u64 kept = r.count;
    const u64 by_rank = rank_limit - r.above_count;  // >= 1: the range's first token is kept
    if (by_rank < kept) kept = by_rank;
    const u64 by_weight = (weight_limit - r.above_weight) / w;  // tokens past the first
    if (by_weight < kept - 1) kept = by_weight + 1;
    const double t_low = exponent_floor(w), t_high = exponent_ceiling(w + 1);
    const int32_t id = find_by_running_sum(
        [&](int32_t, float x) -> u64 {
          const double t = exponent(x);
          return t >= t_low && t < t_high && sampling_math::weight_of_exponent(t) == w ? 1 : 0;
        },
        [&](u64) { return kept - 1; }, -1);
    return {w, id};
  }

  // The smallest id whose running sum of weight_of(id, logit) over [0, id] (id order) exceeds
  // target_of(total sum); `fallback` if none does.
  template <typename WeightOf, typename TargetOf>
  __device__ int32_t find_by_running_sum(WeightOf weight_of, TargetOf target_of, int32_t fallback) {
    const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
    for (int s = warp; s < kSegments; s += kSampleWarps) {
      const int32_t begin = s * segment_len_;
      const int32_t end = begin + segment_len_ < vocab_ ? begin + segment_len_ : vocab_;
      u64 sum = 0;
      for (int32_t base = begin + lane; base < end; base += 32 * kLoadsInFlight) {
        float x[kLoadsInFlight];
#pragma unroll
        for (int u = 0; u < kLoadsInFlight; ++u) {
          const int32_t i = base + 32 * u;
          x[u] = i < end ? logits_[i] : -INFINITY;
        }
#pragma unroll
        for (int u = 0; u < kLoadsInFlight; ++u) {
          const int32_t i = base + 32 * u;
          if (i < end) sum += weight_of(i, x[u]);
        }
      }
      sum = warp_sum_of(sum);
      if (lane == 0) sh_.segment_weight[s] = sum;
    }
    __syncthreads();
    return search_segments(weight_of, target_of, fallback);
  }

  // find_by_running_sum once sh_.segment_weight holds each segment's sum of weight_of.
  template <typename WeightOf, typename TargetOf>
  __device__ int32_t search_segments(WeightOf weight_of, TargetOf target_of, int32_t fallback) {
    const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
    if (threadIdx.x == 0) {
      sh_.found_segment = -1;
      sh_.found = fallback;
    }
    __syncthreads();
    if (warp == 0) {  // each lane owns segments 2 * lane and 2 * lane + 1
      static_assert(kSegments == 64);
      const u64 a = sh_.segment_weight[2 * lane], b = sh_.segment_weight[2 * lane + 1];
      const u64 upto = warp_inclusive_scan(a + b);
      const u64 target = target_of(__shfl_sync(kFullWarp, upto, 31));
      const u64 before = upto - a - b;
      if (before <= target && target < before + a) {
        sh_.found_segment = 2 * lane;
        sh_.segment_base = before;
      } else if (before + a <= target && target < upto) {
        sh_.found_segment = 2 * lane + 1;
        sh_.segment_base = before + a;
      }
      if (lane == 0) sh_.target = target;
    }
    __syncthreads();
    const int s = sh_.found_segment;
    if (s >= 0) {
      const u64 target = sh_.target;
      u64 running = sh_.segment_base;
      const int32_t begin = s * segment_len_;
      const int32_t end = begin + segment_len_ < vocab_ ? begin + segment_len_ : vocab_;
      for (int32_t tile = begin; tile < end && running <= target;
           tile += kSampleThreads * kScanItems) {
        const int32_t first = tile + static_cast<int32_t>(threadIdx.x) * kScanItems;
        u64 w[kScanItems];
        u64 own = 0;
#pragma unroll
        for (int k = 0; k < kScanItems; ++k) {
          w[k] = first + k < end ? weight_of(first + k, logits_[first + k]) : 0;
          own += w[k];
        }
        u64 tile_total = 0;
        u64 at = running + block_exclusive_scan(own, tile_total);
#pragma unroll
        for (int k = 0; k < kScanItems; ++k) {
          if (at <= target && target < at + w[k]) sh_.found = first + k;
          at += w[k];
        }
        running += tile_total;
      }
    }
    __syncthreads();
    const int32_t found = sh_.found;
    __syncthreads();
    return found;
  }

 private:
  __device__ void clear_segments() {
    for (int s = threadIdx.x; s < kSegments; s += kSampleThreads) sh_.segment_weight[s] = 0;
  }

  const float* logits_;
  int32_t vocab_;
  int32_t segment_len_;  // tokens per id segment of the draw
  float max_logit_;
  double inv_temperature_;
  u64 min_weight_;
  SelectShared& sh_;
};

}  // namespace sgl::kernels::cuda
