// One grid-stride kernel over the input ids.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "forward/forward_batch.h"
#include "runner/cuda/sampled_id_refs.h"

namespace sgl::runner::cuda {
namespace {

__global__ void resolve_sampled_id_refs_kernel(int32_t* ids, int32_t n, const int32_t* sampled) {
  for (int32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int32_t id = ids[i];
    if (is_sampled_id_ref(id)) ids[i] = sampled[sampled_id_row(id)];
  }
}

}  // namespace

void resolve_sampled_id_refs(int32_t* ids, int32_t n, const int32_t* sampled,
                             backend::Stream stream) {
  if (n <= 0) return;
  const int threads = 256;
  const int blocks = std::min((n + threads - 1) / threads, 1024);
  resolve_sampled_id_refs_kernel<<<blocks, threads, 0, backend::cuda::native_stream(stream)>>>(
      ids, n, sampled);
  SGL_CUDA_CHECK_LAUNCH();
}

}  // namespace sgl::runner::cuda
