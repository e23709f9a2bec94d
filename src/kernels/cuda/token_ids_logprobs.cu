// CUDA token_ids_logprobs: one block per logits row; a row with ids takes its max and its sum of
// exp(x - max) (f64, as the sampler's logprobs) in two passes, then gathers log_softmax at its
// ids. A row without ids leaves at once.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "kernels/cuda/common/block_reduce.cuh"
#include "kernels/cuda/common/row_pass.cuh"
#include "kernels/cuda/cuda_token_ids_logprobs.h"

namespace sgl::kernels::cuda {
namespace {

constexpr int kIdsThreads = 256;

struct TokenIdsArgs {
  const float* logits;  // f32 [bs, vocab], rows `row_stride` apart
  int64_t row_stride;
  int32_t vocab;
  const int32_t* offsets;  // [bs + 1]
  const int32_t* ids;      // [n]
  int32_t n;
  float* out;  // [n]
};

__global__ void __launch_bounds__(kIdsThreads) token_ids_logprobs_kernel(TokenIdsArgs a) {
  const int64_t row = blockIdx.x;
  const int32_t begin = min(a.offsets[row], a.n), end = min(a.offsets[row + 1], a.n);
  if (begin >= end) return;  // the whole block leaves together
  const float* logits = a.logits + row * a.row_stride;
  float max_of_thread = -INFINITY;
  for_each_token<kIdsThreads>(logits, a.vocab, [&](int32_t, bool valid, float x) {
    if (valid) max_of_thread = fmaxf(max_of_thread, x);
  });
  const float max_logit = block_best({max_of_thread, static_cast<int32_t>(threadIdx.x)}).value;
  double sum = 0.0;
  for_each_token<kIdsThreads>(logits, a.vocab, [&](int32_t, bool valid, float x) {
    if (valid) sum += static_cast<double>(expf(x - max_logit));
  });
  const double log_sum = static_cast<double>(max_logit) + log(block_sum_of(sum));
  for (int32_t j = begin + static_cast<int32_t>(threadIdx.x); j < end; j += kIdsThreads) {
    const int32_t id = a.ids[j];
    a.out[j] = id >= 0 && id < a.vocab
                   ? static_cast<float>(static_cast<double>(logits[id]) - log_sum)
                   : NAN;
  }
}

}  // namespace

void token_ids_logprobs(const Tensor& logits, const Tensor& offsets, const Tensor& ids,
                        const Tensor& out, backend::Stream stream) {
  TokenIdsArgs args{};
  args.logits = logits.data<float>();
  args.row_stride = logits.stride(0);
  args.vocab = static_cast<int32_t>(logits.size(1));
  args.offsets = offsets.data<int32_t>();
  args.ids = ids.data<int32_t>();
  args.n = static_cast<int32_t>(ids.size(0));
  args.out = out.data<float>();
  token_ids_logprobs_kernel<<<static_cast<unsigned>(logits.size(0)), kIdsThreads, 0,
                              backend::cuda::native_stream(stream)>>>(args);
  SGL_CUDA_CHECK_LAUNCH();
}

}  // namespace sgl::kernels::cuda
