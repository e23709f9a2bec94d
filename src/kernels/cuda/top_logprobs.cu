// CUDA top logprobs: each row's k most likely tokens by raw logit (ties by lower id) and their
// log_softmax, as sampling::top_logprobs_of. One block per row: every thread keeps its own top
// kMaxTopLogprobs in registers, then k rounds of a block arg-max merge the lists.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "kernels/cuda/common/block_reduce.cuh"
#include "kernels/cuda/common/row_pass.cuh"
#include "kernels/cuda/cuda_sampling.h"

namespace sgl::kernels::cuda {
namespace {

constexpr int kTopThreads = 256;

struct TopLogprobsArgs {
  const float* logits;  // f32 [bs, vocab], rows `row_stride` apart
  int64_t row_stride;
  int32_t vocab;
  const int32_t* num;  // [bs]
  int32_t k_max;
  int32_t* out_ids;     // [bs, k_max]
  float* out_logprobs;  // [bs, k_max]
};

__global__ void __launch_bounds__(kTopThreads) top_logprobs_kernel(TopLogprobsArgs a) {
  const int64_t row = blockIdx.x;
  const float* logits = a.logits + row * a.row_stride;
  int32_t* ids = a.out_ids + row * a.k_max;
  float* logprobs = a.out_logprobs + row * a.k_max;
  int32_t k = a.num[row];
  k = k < a.k_max ? k : a.k_max;
  k = k < a.vocab ? k : a.vocab;
  k = k > 0 ? k : 0;
  for (int32_t j = k + static_cast<int32_t>(threadIdx.x); j < a.k_max; j += kTopThreads) {
    ids[j] = -1;
    logprobs[j] = -INFINITY;
  }
  if (k == 0) return;  // the whole block leaves together

  // This thread's best kMaxTopLogprobs, sorted; static indices keep them in registers.
  ValueIndex list[kMaxTopLogprobs];
#pragma unroll
  for (int j = 0; j < kMaxTopLogprobs; ++j) list[j] = lowest_value_index();
  for_each_token<kTopThreads>(logits, a.vocab, [&](int32_t i, bool valid, float x) {
    // NaN ranks as -inf: it compares false with everything and would leave a row of NaNs
    // with the lists' placeholder id.
    ValueIndex c{isnan(x) ? -INFINITY : x, i};
    if (!valid || !ranks_before(c, list[kMaxTopLogprobs - 1])) return;
#pragma unroll
    for (int j = 0; j < kMaxTopLogprobs; ++j) {
      if (ranks_before(c, list[j])) {
        const ValueIndex displaced = list[j];
        list[j] = c;
        c = displaced;
      }
    }
  });
  const float max_logit = block_best(list[0]).value;
  double sum = 0.0;
  for_each_token<kTopThreads>(logits, a.vocab, [&](int32_t, bool valid, float x) {
    if (valid) sum += static_cast<double>(expf(x - max_logit));
  });
  const double log_sum = static_cast<double>(max_logit) + log(block_sum_of(sum));
  // k <= vocab real tokens sit in the lists, so every round's winner is real (ids unique).
  for (int32_t r = 0; r < k; ++r) {
    const ValueIndex top = block_best(list[0]);
    if (list[0].index == top.index) {
#pragma unroll
      for (int j = 0; j + 1 < kMaxTopLogprobs; ++j) list[j] = list[j + 1];
      list[kMaxTopLogprobs - 1] = lowest_value_index();
    }
    if (threadIdx.x == 0) {
      ids[r] = top.index;
      logprobs[r] = static_cast<float>(static_cast<double>(top.value) - log_sum);
    }
  }
}

}  // namespace

void top_logprobs(const Tensor& logits, const Tensor& num, const Tensor& out_ids,
                  const Tensor& out_logprobs, backend::Stream stream) {
  TopLogprobsArgs args{};
  args.logits = logits.data<float>();
  args.row_stride = logits.stride(0);
  args.vocab = static_cast<int32_t>(logits.size(1));
  args.num = num.data<int32_t>();
  args.k_max = static_cast<int32_t>(out_ids.size(1));
  args.out_ids = out_ids.data<int32_t>();
  args.out_logprobs = out_logprobs.data<float>();
  top_logprobs_kernel<<<static_cast<unsigned>(logits.size(0)), kTopThreads, 0,
                        backend::cuda::native_stream(stream)>>>(args);
  SGL_CUDA_CHECK_LAUNCH();
}

}  // namespace sgl::kernels::cuda
