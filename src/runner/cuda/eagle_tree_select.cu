// A thread per request row.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "runner/eagle_tree_select.h"

namespace sgl::runner::cuda {
namespace {

__global__ void apply_tree_select_kernel(TreeSelectArgs args) {
  const int32_t b = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x);
  if (b < args.rows) runner::apply_tree_select(args, b);
}

}  // namespace

void apply_tree_select(const TreeSelectArgs& args, backend::Stream stream) {
  if (args.rows <= 0) return;
  const int threads = 64;
  apply_tree_select_kernel<<<(args.rows + threads - 1) / threads, threads, 0,
                             backend::cuda::native_stream(stream)>>>(args);
  SGL_CUDA_CHECK_LAUNCH();
}

}  // namespace sgl::runner::cuda
