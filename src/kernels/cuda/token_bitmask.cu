// CUDA grammar masks: -inf at the tokens a request's grammar does not allow.
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "kernels/cuda/cuda_sampling.h"

namespace sgl::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// Grid (word blocks, masked rows): each thread owns one 32-token word of one masked row and
// writes -inf at its cleared bits. A word that allows everything costs one load.
__global__ void token_bitmask_kernel(float* __restrict__ logits, int64_t row_stride, int64_t vocab,
                                     const int32_t* __restrict__ rows,
                                     const uint32_t* __restrict__ bitmask, int64_t words) {
  const int64_t w = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (w * 32 >= vocab) return;
  const int64_t i = blockIdx.y;
  const uint32_t allowed = bitmask[i * words + w];
  if (allowed == 0xffffffffu) return;
  float* row = logits + static_cast<int64_t>(rows[i]) * row_stride + w * 32;
  const int64_t n = vocab - w * 32 < 32 ? vocab - w * 32 : 32;
  for (int64_t b = 0; b < n; ++b) {
    if (((allowed >> b) & 1u) == 0) row[b] = -INFINITY;
  }
}

}  // namespace

void apply_token_bitmask(const Tensor& logits, const Tensor& rows, const Tensor& bitmask,
                         backend::Stream stream) {
  const int64_t vocab = logits.size(1), words = bitmask.size(1);
  const int64_t word_blocks = ((vocab + 31) / 32 + kThreads - 1) / kThreads;
  const dim3 grid(static_cast<unsigned>(word_blocks), static_cast<unsigned>(rows.size(0)));
  token_bitmask_kernel<<<grid, kThreads, 0, backend::cuda::native_stream(stream)>>>(
      logits.data<float>(), logits.stride(0), vocab, rows.data<int32_t>(),
      static_cast<const uint32_t*>(bitmask.raw()), words);
  SGL_CUDA_CHECK_LAUNCH();
}

}  // namespace sgl::kernels::cuda
