// CudaStream: an owned, move-only cudaStream_t; hands out non-owning Stream handles.
#pragma once

#include "backend/stream.h"

namespace sgl::backend {

class CudaStream {
 public:
  explicit CudaStream(int device_index);
  ~CudaStream();
  CudaStream(CudaStream&& other) noexcept;
  CudaStream& operator=(CudaStream&& other) noexcept;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  Stream get() const { return {Device::cuda(device_index_), native_}; }

 private:
  int device_index_ = 0;
  void* native_ = nullptr;
};

}  // namespace sgl::backend
