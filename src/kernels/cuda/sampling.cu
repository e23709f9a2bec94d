// CUDA sampling: one block per logits row follows the rules of sampling/sampler.h (greedy, then
// weights, min-p, top-k, top-p and an id-order draw) without sorting the vocabulary. For small
// batches each row is a thread-block cluster whose CTAs find the row's maximum over a slice of
// the vocabulary each; the first CTA then goes on alone.
#include <cooperative_groups.h>

#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "kernels/cuda/common/block_reduce.cuh"
#include "kernels/cuda/common/pdl.cuh"
#include "kernels/cuda/common/row_pass.cuh"
#include "kernels/cuda/cuda_sampling.h"
#include "kernels/cuda/sampling_select.cuh"
#include "kernels/cuda/stream_gemms.h"
#include "kernels/sampling_math.h"

namespace sgl::kernels::cuda {
namespace {

namespace sm = sampling_math;

constexpr int kMaxRowParts = 8;  // CTAs per row's cluster (the portable cluster size)

struct SampleArgs {
  const float* logits;  // f32 [bs, vocab], rows `row_stride` apart
  int64_t row_stride;
  int32_t vocab;
  const float* temperature;  // [bs]
  const int32_t* top_k;
  const float* top_p;
  const float* min_p;
  const u64* seed;
  const u64* step;
  int32_t* next_ids;     // [bs]
  float* next_logprobs;  // [bs] or null
};

// Sum of exp(x - max) over the row, for the logprobs.
__device__ double row_exp_sum(const float* logits, int32_t vocab, float max_logit) {
  double sum = 0.0;
  for_each_token<kSampleThreads>(logits, vocab, [&](int32_t, bool valid, float x) {
    if (valid) sum += static_cast<double>(expf(x - max_logit));
  });
  return block_sum_of(sum);
}

// A non-greedy row: rules 2-5 of sampler.h. Also sums exp(x - max) when exp_sum is given.
__device__ int32_t sample_row(RowSelector& row, const float* logits, int32_t vocab, float max_logit,
                              int32_t greedy_id, int32_t top_k, float top_p, u64 seed, u64 step,
                              double* exp_sum) {
  const u64 bits = sm::random_bits53(seed, step);
  const auto draw_target = [&](u64 kept_weight) { return sm::scale_draw(bits, kept_weight); };
  if ((top_k <= 0 || top_k >= vocab) && top_p >= 1.f) {
    // Only min-p filters: the kept set is every candidate, no pivot to find.
    if (exp_sum) *exp_sum = row_exp_sum(logits, vocab, max_logit);
    const double t_floor = RowSelector::exponent_floor(row.min_weight());
    return row.find_by_running_sum(
        [&](int32_t, float x) -> u64 {
          const u64 w = row.weight_if_above(x, t_floor);
          return row.is_candidate(w) ? w : 0;
        },
        draw_target, greedy_id);
  }
  const u64 total = row.histogram_all(exp_sum);
  if (total == 0) return greedy_id;  // every logit -inf
  const u64 rank_limit = top_k > 0 && top_k < vocab ? static_cast<u64>(top_k) : vocab;
  const u64 weight_limit = sm::top_p_limit(top_p, total);
  WeightRange range = row.pivot_log_bucket(rank_limit, weight_limit);
  Pivot pivot;
  bool segments_summed = false;
  for (;;) {
    if (range.count <= kCollectCap) {
      pivot = row.pivot_by_sorting(range, rank_limit, weight_limit);
      segments_summed = true;
      break;
    }
    if (range.width == 1) {
      pivot = row.pivot_in_tie(range, rank_limit, weight_limit);
      break;
    }
    range = row.narrow(range, rank_limit, weight_limit);
  }
  const double t_floor = RowSelector::exponent_floor(pivot.weight);
  const auto kept_weight = [&](int32_t i, float x) -> u64 {
    const u64 w = row.weight_if_above(x, t_floor);
    return w > pivot.weight || (w == pivot.weight && i <= pivot.id) ? w : 0;
  };
  return segments_summed ? row.search_segments(kept_weight, draw_target, greedy_id)
                         : row.find_by_running_sum(kept_weight, draw_target, greedy_id);
}

// The best (value, id) of row[begin, end) for this thread (the block's threads share the slice).
// A 16-byte aligned row is read in float4s, so a slice of a cluster row (16k logits of Llama-3)
// is one round of loads per thread instead of four (docs/perf-log/cuda-session-10.md).
__device__ ValueIndex slice_best_of_thread(const float* row, int32_t begin, int32_t end) {
  ValueIndex best = lowest_value_index();
  const auto take = [&](float x, int32_t id) {
    const ValueIndex v{x, id};
    if (ranks_before(v, best)) best = v;
  };
  if (reinterpret_cast<uintptr_t>(row + begin) % 16 != 0) {
    for_each_token<kSampleThreads>(row + begin, end - begin, [&](int32_t i, bool valid, float x) {
      if (valid) take(x, begin + i);
    });
    return best;
  }
  const auto* quads = reinterpret_cast<const float4*>(row + begin);
  const int32_t n4 = (end - begin) / 4;
  const auto tid = static_cast<int32_t>(threadIdx.x);
  for (int32_t base = 0; base < n4; base += kSampleThreads * kLoadsInFlight) {
    float4 x[kLoadsInFlight];
#pragma unroll
    for (int u = 0; u < kLoadsInFlight; ++u) {
      const int32_t i = base + u * kSampleThreads + tid;
      if (i < n4) x[u] = quads[i];
    }
#pragma unroll
    for (int u = 0; u < kLoadsInFlight; ++u) {
      const int32_t i = base + u * kSampleThreads + tid;
      if (i >= n4) continue;
      const int32_t id = begin + 4 * i;
      take(x[u].x, id);
      take(x[u].y, id + 1);
      take(x[u].z, id + 2);
      take(x[u].w, id + 3);
    }
  }
  const int32_t tail = begin + 4 * n4 + tid;  // the last (end - begin) % 4 logits
  if (tail < end) take(row[tail], tail);
  return best;
}

// Rule 1 (and the maximum every weight is relative to): the row's first maximum. Each CTA of
// the row's cluster scans an equal slice (whole float4s but the last); the first CTA gathers the
// slices' bests (the same order, so the same answer as one pass) and returns true, the others
// return false.
__device__ bool row_first_maximum(const float* logits, int32_t vocab, ValueIndex& best) {
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  const auto parts = static_cast<int32_t>(cluster.num_blocks());
  const auto part = static_cast<int32_t>(cluster.block_rank());
  const int32_t per = ((vocab + parts - 1) / parts + 3) / 4 * 4;
  const int32_t begin = min(vocab, part * per), end = min(vocab, begin + per);
  best = block_best(slice_best_of_thread(logits, begin, end));
  if (parts == 1) return true;
  __shared__ ValueIndex slice_best;
  if (threadIdx.x == 0) slice_best = best;
  cluster.sync();  // every slice's best is published
  if (part == 0) {
    for (int32_t r = 1; r < parts; ++r) {
      const ValueIndex other = *cluster.map_shared_rank(&slice_best, r);
      if (ranks_before(other, best)) best = other;
    }
  }
  cluster.sync();  // the first CTA has read them: the others may exit
  return part == 0;
}

// grid (cluster CTAs, rows): one cluster per logits row.
__global__ void __launch_bounds__(kSampleThreads) sample_kernel(SampleArgs a) {
  __shared__ SelectShared sh;
  const int64_t row_index = blockIdx.y;
  const float* logits = a.logits + row_index * a.row_stride;
  const int32_t vocab = a.vocab;
  ValueIndex best;
  if (!row_first_maximum(logits, vocab, best)) return;
  const float temperature = a.temperature[row_index];
  const int32_t top_k = a.top_k[row_index];
  double exp_sum = 0.0;
  double* want_exp_sum = a.next_logprobs ? &exp_sum : nullptr;
  int32_t id = best.index;
  if (!sm::is_greedy_row(temperature, top_k)) {
    RowSelector row(logits, vocab, best.value, 1.0 / static_cast<double>(temperature),
                    sm::min_p_weight(a.min_p[row_index]), sh);
    id = sample_row(row, logits, vocab, best.value, best.index, top_k, a.top_p[row_index],
                    a.seed[row_index], a.step[row_index], want_exp_sum);
  } else if (want_exp_sum) {
    exp_sum = row_exp_sum(logits, vocab, best.value);
  }
  // NOTE: a row with no comparable logit (all NaN: broken weights, an overflow) has no first
  // maximum; any id outside the vocabulary would be embedded by the next step. Take id 0, as
  // the CPU sampler does.
  if (id < 0 || id >= vocab) id = 0;
  if (threadIdx.x == 0) {
    a.next_ids[row_index] = id;
    if (a.next_logprobs) {
      const double log_sum = static_cast<double>(best.value) + log(exp_sum);
      a.next_logprobs[row_index] = static_cast<float>(static_cast<double>(logits[id]) - log_sum);
    }
  }
}

}  // namespace

void sample_tokens(const Tensor& logits, const SamplingRows& rows, const SampledTokens& out,
                   backend::Stream stream) {
  SampleArgs args{};
  args.logits = logits.data<float>();
  args.row_stride = logits.stride(0);
  args.vocab = static_cast<int32_t>(logits.size(1));
  args.temperature = rows.temperature.data<float>();
  args.top_k = rows.top_k.data<int32_t>();
  args.top_p = rows.top_p.data<float>();
  args.min_p = rows.min_p.data<float>();
  args.seed = static_cast<const u64*>(rows.seed.raw());
  args.step = static_cast<const u64*>(rows.step.raw());
  args.next_ids = out.next_token_ids.data<int32_t>();
  args.next_logprobs =
      out.next_token_logprobs.defined() ? out.next_token_logprobs.data<float>() : nullptr;
  // One CTA per row once the rows fill the GPU; up to 8 per row below that. (One CTA's scan of
  // Llama-3's 128k logits is a latency-bound pass over L2: docs/perf-log/cuda-session-06.md and
  // cuda-session-07.md.)
  const auto row_count = static_cast<int>(logits.size(0));
  const int sms = StreamGemms::of(stream).sm_count;
  int parts = 1;
  while (parts < kMaxRowParts && 2 * parts * row_count <= sms) parts *= 2;
  launch_clusters(sample_kernel, dim3(parts, row_count), dim3(parts, 1, 1), kSampleThreads, 0,
                  backend::cuda::native_stream(stream), args);
  if (out.top_logprobs.defined()) {
    top_logprobs(logits, rows.top_logprobs_num, out.top_logprob_ids, out.top_logprobs, stream);
  }
}

}  // namespace sgl::kernels::cuda
