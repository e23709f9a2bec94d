// CudaStream: an owned, move-only cudaStream_t plus its cuBLAS handle, GEMM workspace and GEMM
// slot (a copy stream has none of the three); hands out Stream handles.
#pragma once

#include <memory>

#include "backend/stream.h"
#include "backend/stream_slot.h"

namespace sgl::backend {

class CudaStream final : public OwnedStream {
 public:
  // `gemms` false: a stream for copies and plain kernels only (no cuBLAS state).
  explicit CudaStream(int device_index, bool gemms = true);
  ~CudaStream() override;
  CudaStream(CudaStream&& other) noexcept;
  CudaStream& operator=(CudaStream&& other) noexcept;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  Stream get() const override {
    return {.device = Device::cuda(device_index_),
            .native = native_,
            .blas = blas_,
            .workspace = workspace_,
            .workspace_bytes = workspace_ != nullptr ? kBlasWorkspaceBytes : 0,
            .gemm = gemm_.get()};
  }

 private:
  void release();
  int device_index_ = 0;
  void* native_ = nullptr;
  static constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;
  void* blas_ = nullptr;       // cublasHandle_t
  void* workspace_ = nullptr;  // cuBLAS / cuBLASLt workspace (device memory)
  // The kernels' GEMM state (created on first use, freed before the handle and the stream);
  // behind a pointer so Stream handles stay valid when the CudaStream moves.
  std::unique_ptr<StreamSlot> gemm_;
};

}  // namespace sgl::backend
