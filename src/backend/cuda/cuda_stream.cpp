// CudaStream lifetime and the CUDA runtime wrappers of backend.h.
#include "backend/cuda/cuda_stream.h"

#include <cublas_v2.h>
#include <cuda_profiler_api.h>

#include <utility>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_runtime.h"
#include "backend/cuda/native_stream.h"

namespace sgl::backend {

CudaStream::CudaStream(int device_index, bool gemms) : device_index_(device_index) {
  SGL_CUDA_CHECK(cudaSetDevice(device_index));
  cudaStream_t stream = nullptr;
  SGL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  native_ = stream;
  if (!gemms) return;
  cublasHandle_t handle = nullptr;
  SGL_CHECK(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS) << "cublasCreate failed";
  SGL_CHECK(cublasSetStream(handle, stream) == CUBLAS_STATUS_SUCCESS) << "cublasSetStream failed";
  // A workspace of our own, so cuBLAS never allocates while a CUDA graph is being captured.
  SGL_CUDA_CHECK(cudaMalloc(&workspace_, kBlasWorkspaceBytes));
  SGL_CHECK(cublasSetWorkspace(handle, workspace_, kBlasWorkspaceBytes) == CUBLAS_STATUS_SUCCESS)
      << "cublasSetWorkspace failed";
  blas_ = handle;
  gemm_ = std::make_unique<StreamSlot>();
}

CudaStream::~CudaStream() { release(); }

void CudaStream::release() {
  gemm_.reset();  // may hold cuBLASLt state that uses the stream and the workspace
  if (blas_ != nullptr) cublasDestroy(static_cast<cublasHandle_t>(blas_));
  if (native_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(native_));
  if (workspace_ != nullptr) cudaFree(workspace_);
  blas_ = native_ = workspace_ = nullptr;
}

CudaStream::CudaStream(CudaStream&& other) noexcept
    : device_index_(other.device_index_),
      native_(std::exchange(other.native_, nullptr)),
      blas_(std::exchange(other.blas_, nullptr)),
      workspace_(std::exchange(other.workspace_, nullptr)),
      gemm_(std::move(other.gemm_)) {}

CudaStream& CudaStream::operator=(CudaStream&& other) noexcept {
  if (this != &other) {
    release();
    device_index_ = other.device_index_;
    native_ = std::exchange(other.native_, nullptr);
    blas_ = std::exchange(other.blas_, nullptr);
    workspace_ = std::exchange(other.workspace_, nullptr);
    gemm_ = std::move(other.gemm_);
  }
  return *this;
}

namespace cuda {

Result<MemoryInfo> memory_info(int device_index) {
  SGL_RETURN_IF_ERROR(check_device(device_index));
  SGL_CUDA_CHECK(cudaSetDevice(device_index));
  size_t free_bytes = 0, total_bytes = 0;
  SGL_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return MemoryInfo{free_bytes, total_bytes};
}

Status set_profiler_capture(int device_index, bool on) {
  SGL_CUDA_CHECK(cudaSetDevice(device_index));
  const cudaError_t err = on ? cudaProfilerStart() : cudaProfilerStop();
  if (err != cudaSuccess) {
    return internal_error(std::string(on ? "cudaProfilerStart" : "cudaProfilerStop") + ": " +
                          cudaGetErrorString(err));
  }
  return {};
}

int multiprocessor_count(int device_index) {
  int sms = 0;
  SGL_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_index));
  return sms;
}

Status check_device(int device_index) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    return unimplemented(std::string("no usable CUDA device: ") + cudaGetErrorString(err));
  }
  if (device_index < 0 || device_index >= count) {
    return invalid_argument("cuda:" + std::to_string(device_index) + " requested but " +
                            std::to_string(count) + " CUDA device(s) are visible");
  }
  return Status::ok_status();
}

void synchronize(Stream stream) {
  SGL_CUDA_CHECK(cudaStreamSynchronize(cuda::native_stream(stream)));
}

}  // namespace cuda
}  // namespace sgl::backend
