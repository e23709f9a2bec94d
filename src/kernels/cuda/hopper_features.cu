// hopper_kernels_run: a one-thread probe compiled like every other kernel of the build.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_check.h"
#include "kernels/cuda/hopper_features.h"

namespace sgl::kernels::cuda {
namespace {

__global__ void sm90a_probe_kernel(int* built) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *built = 1;
#else
  *built = 0;
#endif
}

}  // namespace

bool hopper_kernels_run(int device_index) {
  int major = 0, minor = 0;
  SGL_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_index));
  SGL_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device_index));
  if (major != 9 || minor != 0) return false;
  // A stream's first GEMM may run inside a graph capture: the probe takes a stream of its own,
  // stream-ordered memory (no device-wide synchronization) and the relaxed capture mode.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  SGL_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
  int previous = 0;
  SGL_CUDA_CHECK(cudaGetDevice(&previous));
  SGL_CUDA_CHECK(cudaSetDevice(device_index));
  cudaStream_t stream = nullptr;
  SGL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int* built = nullptr;
  SGL_CUDA_CHECK(cudaMallocAsync(&built, sizeof(int), stream));
  sm90a_probe_kernel<<<1, 1, 0, stream>>>(built);
  // No image for this device at all: the build's other kernels fail loudly on their own.
  const bool launched = cudaGetLastError() == cudaSuccess;
  int host = 0;
  if (launched) {
    SGL_CUDA_CHECK(cudaMemcpyAsync(&host, built, sizeof(int), cudaMemcpyDeviceToHost, stream));
  }
  SGL_CUDA_CHECK(cudaFreeAsync(built, stream));
  SGL_CUDA_CHECK(cudaStreamSynchronize(stream));
  SGL_CUDA_CHECK(cudaStreamDestroy(stream));
  SGL_CUDA_CHECK(cudaSetDevice(previous));
  SGL_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
  return launched && host == 1;
}

}  // namespace sgl::kernels::cuda
