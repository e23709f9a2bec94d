// CUDA moe_route: one warp per token scores its router logits (softmax or sigmoid, f32), takes
// the top k (k <= 32) by k rounds of a warp arg-max with the CPU's tie and NaN rules, and
// renormalises. moe_local_ids: expert parallelism's masking of the other ranks' experts, a
// thread per pair.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "core/check.h"
#include "kernels/cuda/common/block_reduce.cuh"
#include "kernels/cuda/common/pdl.cuh"
#include "kernels/cuda/cuda_moe.h"

namespace sgl::kernels::cuda {
namespace {

constexpr int kWarps = 4;  // tokens per block
constexpr int kMaxPerLane = 16;
constexpr int64_t kMaxExperts = 32 * kMaxPerLane;

struct RouteParams {
  const float* logits;  // [T, E], row stride ld
  int64_t ld;
  int64_t tokens;
  int experts;
  int k;
  bool sigmoid;
  bool renormalize;
  float* weights;  // [T, k]
  int32_t* ids;    // [T, k]
};

// The CPU picks, among the experts not yet taken, the first one and replaces it by each later
// one with a strictly greater score: the highest score with the lowest index wins, NaN scores
// never win, unless the first untaken expert's score is NaN (nothing compares greater than it).
// Lane l holds experts l, l + 32, ... in s[]; bit i of `taken` marks s[i] taken (or absent).
template <int kPerLane>
__global__ void __launch_bounds__(32 * kWarps) moe_route_kernel(const RouteParams p) {
  pdl_wait();
  pdl_launch_dependents();
  const int lane = threadIdx.x % 32;
  const int64_t token = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (token >= p.tokens) return;  // the whole warp
  const float* row = p.logits + token * p.ld;

  float s[kPerLane];
  unsigned taken = 0;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int e = lane + 32 * i;
    s[i] = e < p.experts ? row[e] : 0.f;
    if (e >= p.experts) taken |= 1u << i;
  }
  if (p.sigmoid) {
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) s[i] = 1.0f / (1.0f + expf(-s[i]));
  } else {
    float max = NAN;  // fmaxf ignores NaN, as the CPU's std::fmax
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      if (!(taken >> i & 1u)) max = fmaxf(max, s[i]);
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
      max = fmaxf(max, __shfl_xor_sync(kFullWarp, max, offset));
    }
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      s[i] = (taken >> i & 1u) ? 0.f : expf(s[i] - max);
      sum += s[i];
    }
    sum = warp_sum_of(sum);
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) s[i] /= sum;
  }

  // Round j's pick stays with lane j, and the k picks leave in one write at the end (k <= 32).
  int32_t my_id = 0;
  float my_weight = 0.f;
  float total = 0.f;
  for (int j = 0; j < p.k; ++j) {
    // This lane's best untaken non-NaN score (lowest index on ties: i ascends with the expert)
    // and its first untaken expert, with whether that one's score is NaN.
    ValueIndex best = lowest_value_index();
    unsigned first = 0xffffffffu;
#pragma unroll
    for (int i = kPerLane - 1; i >= 0; --i) {
      if (taken >> i & 1u) continue;
      const unsigned e = static_cast<unsigned>(lane + 32 * i);
      first = e << 1 | (isnan(s[i]) ? 1u : 0u);
      if (!isnan(s[i]) && s[i] >= best.value) best = {s[i], static_cast<int32_t>(e)};
    }
    // The warp's best in two reductions (not five shuffle rounds): scores are >= 0 (softmax,
    // sigmoid; never -0) so their bits order as they do; + 1 keeps a score of 0 apart from none.
    const bool has = best.index != INT32_MAX;
    const unsigned key = has ? __float_as_uint(best.value) + 1u : 0u;
    const unsigned top = __reduce_max_sync(kFullWarp, key);
    const unsigned index =
        __reduce_min_sync(kFullWarp, has && key == top ? static_cast<unsigned>(best.index) : ~0u);
    if (top != 0) best = {__uint_as_float(top - 1u), static_cast<int32_t>(index)};
    first = __reduce_min_sync(kFullWarp, first);
    if (first & 1u) best = {NAN, static_cast<int32_t>(first >> 1)};
    if (lane == best.index % 32) taken |= 1u << (best.index / 32);
    total += best.value;
    if (lane == j) {
      my_id = best.index;
      my_weight = best.value;
    }
  }
  if (lane < p.k) {
    p.ids[token * p.k + lane] = my_id;
    p.weights[token * p.k + lane] = p.renormalize ? my_weight / total : my_weight;
  }
}

__global__ void moe_local_ids_kernel(const int32_t* __restrict__ ids, int64_t entries,
                                     int64_t first, int64_t num_local,
                                     int32_t* __restrict__ local) {
  pdl_wait();
  pdl_launch_dependents();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < entries;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t e = ids[i] - first;
    local[i] = e >= 0 && e < num_local ? static_cast<int32_t>(e) : -1;
  }
}

}  // namespace

void moe_local_ids(const Tensor& topk_ids, int64_t first_expert, int64_t num_local,
                   const Tensor& local_ids, backend::Stream stream) {
  const int64_t entries = topk_ids.numel();
  constexpr int kThreads = 256;
  const auto blocks =
      static_cast<unsigned>(std::min<int64_t>((entries + kThreads - 1) / kThreads, 1024));
  launch_pdl(moe_local_ids_kernel, dim3(blocks), dim3(kThreads), 0,
             backend::cuda::native_stream(stream), topk_ids.data<int32_t>(), entries, first_expert,
             num_local, local_ids.data<int32_t>());
}

void moe_route(const Tensor& router_logits, bool sigmoid, bool renormalize,
               const Tensor& topk_weights, const Tensor& topk_ids, backend::Stream stream) {
  const int64_t tokens = router_logits.size(0), experts = router_logits.size(1);
  SGL_CHECK(experts <= kMaxExperts)
      << "moe_route: the CUDA kernel takes up to " << kMaxExperts << " experts, got " << experts;
  SGL_CHECK(topk_ids.size(1) <= 32)
      << "moe_route: the CUDA kernel takes top k <= 32, got " << topk_ids.size(1);
  const RouteParams p{router_logits.data<float>(),
                      router_logits.stride(0),
                      tokens,
                      static_cast<int>(experts),
                      static_cast<int>(topk_ids.size(1)),
                      sigmoid,
                      renormalize,
                      topk_weights.data<float>(),
                      topk_ids.data<int32_t>()};
  const dim3 grid(static_cast<unsigned>((tokens + kWarps - 1) / kWarps));
  const auto s = backend::cuda::native_stream(stream);
  if (experts <= 32) {
    launch_pdl(moe_route_kernel<1>, grid, 32 * kWarps, 0, s, p);
  } else if (experts <= 64) {
    launch_pdl(moe_route_kernel<2>, grid, 32 * kWarps, 0, s, p);
  } else if (experts <= 128) {
    launch_pdl(moe_route_kernel<4>, grid, 32 * kWarps, 0, s, p);
  } else if (experts <= 256) {
    launch_pdl(moe_route_kernel<8>, grid, 32 * kWarps, 0, s, p);
  } else {
    launch_pdl(moe_route_kernel<16>, grid, 32 * kWarps, 0, s, p);
  }
}

}  // namespace sgl::kernels::cuda
