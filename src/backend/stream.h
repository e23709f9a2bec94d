// Stream: a non-owning handle to an ordered queue of device work (a no-op on CPU).
#pragma once

#include <memory>

#include "core/device.h"

namespace sgl::backend {

// Trivially copyable. For CUDA, `native` is a cudaStream_t (nullptr = the legacy default
// stream); the owning RAII type is CudaStream (backend/cuda/cuda_stream.h), which also owns
// the cuBLAS handle bound to it.
struct Stream {
  Device device = Device::cpu();
  void* native = nullptr;
  void* blas = nullptr;  // CUDA: a cublasHandle_t bound to `native`, for GEMMs

  static Stream cpu() { return {}; }
};

// Blocks the host until all work queued on `stream` is done (no-op on CPU).
void synchronize(Stream stream);

// Owns a stream (RAII, move-only behind the pointer); CPU streams own nothing.
class OwnedStream {
 public:
  virtual ~OwnedStream() = default;
  virtual Stream get() const = 0;
};

// A new stream on `device` (CUDA: a non-blocking stream with its own cuBLAS handle).
std::unique_ptr<OwnedStream> create_stream(Device device);

}  // namespace sgl::backend
