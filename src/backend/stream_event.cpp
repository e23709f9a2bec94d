// StreamEvent over the CUDA runtime (no-ops for CPU streams and builds without CUDA).
#include "backend/stream_event.h"

#include <utility>

#include "core/check.h"
#ifdef SGL_WITH_CUDA
#include <cuda_runtime.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#endif

namespace sgl::backend {

StreamEvent::~StreamEvent() {
#ifdef SGL_WITH_CUDA
  if (native_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(native_));
#endif
}

StreamEvent::StreamEvent(StreamEvent&& other) noexcept
    : native_(std::exchange(other.native_, nullptr)) {}

StreamEvent& StreamEvent::operator=(StreamEvent&& other) noexcept {
  if (this != &other) std::swap(native_, other.native_);
  return *this;
}

void StreamEvent::record(Stream stream) {
  if (stream.device.is_cpu()) return;
#ifdef SGL_WITH_CUDA
  if (native_ == nullptr) {
    SGL_CUDA_CHECK(cudaSetDevice(stream.device.index));
    cudaEvent_t event = nullptr;
    SGL_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    native_ = event;
  }
  SGL_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(native_), cuda::native_stream(stream)));
#else
  SGL_CHECK(false) << "CUDA event in a build without CUDA";
#endif
}

void StreamEvent::synchronize() const {
#ifdef SGL_WITH_CUDA
  if (native_ != nullptr) SGL_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(native_)));
#endif
}

void StreamEvent::make_wait(Stream stream) const {
#ifdef SGL_WITH_CUDA
  if (native_ != nullptr && !stream.device.is_cpu()) {
    SGL_CUDA_CHECK(
        cudaStreamWaitEvent(cuda::native_stream(stream), static_cast<cudaEvent_t>(native_), 0));
  }
#endif
}

}  // namespace sgl::backend
