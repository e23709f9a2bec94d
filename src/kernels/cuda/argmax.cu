// CUDA argmax_rows: one block per row, each thread's strided best, then the block's (first
// maximum wins: block_reduce.cuh's ranks_before), through the id map if there is one.
#include <cstdint>

#include "backend/cuda/native_stream.h"
#include "kernels/cuda/common/block_reduce.cuh"
#include "kernels/cuda/common/pdl.cuh"
#include "kernels/cuda/cuda_argmax.h"

namespace sgl::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void argmax_rows_kernel(const float* __restrict__ logits, int64_t row_stride,
                                   int32_t vocab, const int32_t* __restrict__ id_map,
                                   int32_t* __restrict__ out) {
  pdl_wait();
  pdl_launch_dependents();
  const float* row = logits + blockIdx.x * row_stride;
  ValueIndex best = lowest_value_index();
  for (int32_t i = threadIdx.x; i < vocab; i += kThreads) {
    const ValueIndex v{row[i], i};
    if (ranks_before(v, best)) best = v;  // NaN ranks before nothing
  }
  best = block_best(best);
  if (threadIdx.x == 0) {
    const int32_t index = best.index == INT32_MAX ? 0 : best.index;
    out[blockIdx.x] = id_map != nullptr ? id_map[index] : index;
  }
}

}  // namespace

void argmax_rows(const Tensor& logits, const Tensor& out, const Tensor& id_map,
                 backend::Stream stream) {
  launch_pdl(argmax_rows_kernel, dim3(static_cast<unsigned>(logits.size(0))), kThreads, 0,
             backend::cuda::native_stream(stream), logits.data<float>(), logits.stride(0),
             static_cast<int32_t>(logits.size(1)),
             id_map.defined() ? id_map.data<int32_t>() : nullptr, out.data<int32_t>());
}

}  // namespace sgl::kernels::cuda
