// CudaStream: an owned, move-only cudaStream_t plus its cuBLAS handle; hands out Stream handles.
#pragma once

#include "backend/stream.h"

namespace sgl::backend {

class CudaStream final : public OwnedStream {
 public:
  explicit CudaStream(int device_index);
  ~CudaStream() override;
  CudaStream(CudaStream&& other) noexcept;
  CudaStream& operator=(CudaStream&& other) noexcept;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  Stream get() const override { return {Device::cuda(device_index_), native_, blas_}; }

 private:
  void release();
  int device_index_ = 0;
  void* native_ = nullptr;
  static constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;
  void* blas_ = nullptr;       // cublasHandle_t
  void* workspace_ = nullptr;  // cuBLAS workspace (device memory)
};

}  // namespace sgl::backend
