// CUDA per-request row pooling for embedding models (last row, or f32 sum of the rows).
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "kernels/cuda/common/cuda_types.cuh"
#include "kernels/cuda/common/dispatch.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace sgl::kernels::cuda {
namespace {

constexpr int kColumns = 32;   // one warp reads 32 neighbouring columns of a row
constexpr int kRowGroups = 8;  // warps of a block, each taking every 8th row

// Block (kColumns, kRowGroups) per (32-column tile, request): each warp sums its rows, then the
// first warp adds the groups' partial sums in a fixed order (the result is deterministic).
template <typename T>
__global__ void pool_rows_kernel(const T* __restrict__ src, const int32_t* __restrict__ indptr,
                                 int64_t h, bool last_only, float* __restrict__ out) {
  __shared__ float partial[kRowGroups][kColumns];
  const int64_t b = blockIdx.y;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumns + threadIdx.x;
  const int64_t first = indptr[b], end = indptr[b + 1];
  // An empty request (a bug upstream; the CPU checks it) sums nothing rather than reading the
  // request before it.
  const int64_t begin = last_only && end > first ? end - 1 : first;
  float sum = 0.f;
  if (c < h) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowGroups) sum += to_float(src[r * h + c]);
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || c >= h) return;
  float total = 0.f;
  for (int g = 0; g < kRowGroups; ++g) total += partial[g][threadIdx.x];
  out[b * h + c] = total;
}

}  // namespace

void pool_rows(const Tensor& src, const Tensor& qo_indptr, RowPool pool, const Tensor& out,
               backend::Stream stream) {
  const int64_t h = src.size(1);
  const dim3 grid(static_cast<unsigned>((h + kColumns - 1) / kColumns),
                  static_cast<unsigned>(out.size(0)));
  const dim3 block(kColumns, kRowGroups);
  SGL_DISPATCH_FLOAT(src.dtype(), T, {
    pool_rows_kernel<T><<<grid, block, 0, backend::cuda::native_stream(stream)>>>(
        static_cast<const T*>(src.raw()), qo_indptr.data<int32_t>(), h, pool == RowPool::kLast,
        out.data<float>());
  });
  SGL_CUDA_CHECK_LAUNCH();
}

}  // namespace sgl::kernels::cuda
