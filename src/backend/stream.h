// Stream: a non-owning handle to an ordered queue of device work (a no-op on CPU).
#pragma once

#include <cstddef>
#include <memory>

#include "core/device.h"

namespace sgl::backend {

class StreamSlot;

// Trivially copyable. For CUDA, `native` is a cudaStream_t (nullptr = the legacy default
// stream); the owning RAII type is CudaStream (backend/cuda/cuda_stream.h), which also owns
// the cuBLAS handle, the GEMM workspace and the GEMM slot bound to it.
struct Stream {
  Device device = Device::cpu();
  void* native = nullptr;
  void* blas = nullptr;  // CUDA: a cublasHandle_t bound to `native`, for GEMMs
  // CUDA: device scratch for GEMMs queued on `native` (cuBLAS's workspace, shared with
  // cuBLASLt: work on one stream runs in order, so they never use it at the same time).
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  // CUDA: the kernels' per-stream GEMM state (cuBLASLt handle + plan cache); see stream_slot.h.
  StreamSlot* gemm = nullptr;

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
// A stream for copies (and plain kernels) beside the compute stream: no GEMM state.
std::unique_ptr<OwnedStream> create_copy_stream(Device device);

}  // namespace sgl::backend
