// A thread per request row.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "runner/eagle_chain_accept.h"

namespace sgl::runner::cuda {
namespace {

__global__ void apply_chain_accept_kernel(ChainAcceptArgs args) {
  const int32_t b = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x);
  if (b < args.bs) runner::apply_chain_accept(args, b);
}

}  // namespace

void apply_chain_accept(const ChainAcceptArgs& args, backend::Stream stream) {
  if (args.bs <= 0) return;
  const int threads = 64;
  apply_chain_accept_kernel<<<(args.bs + threads - 1) / threads, threads, 0,
                              backend::cuda::native_stream(stream)>>>(args);
  SGL_CUDA_CHECK_LAUNCH();
}

}  // namespace sgl::runner::cuda
