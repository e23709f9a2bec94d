// StreamSlot: one object a higher layer keeps per stream, created on first use, opaque here.
#pragma once

#include <memory>
#include <mutex>

namespace sgl::backend {

// Owned by a stream (CudaStream), reached through Stream handles. The backend sits below the
// layers that use it, so it stores the object type-erased and never looks inside; the kernels
// keep their per-stream GEMM state (kernels::cuda::StreamGemms) here. Thread-safe: the object
// is created once (std::call_once); what it does afterwards is its own business.
class StreamSlot {
 public:
  // The object, made by `make()` (returning std::unique_ptr<T>) on the first call. Every caller
  // of one slot must use the same T. The slot frees the object when the stream is destroyed.
  template <typename T, typename Make>
  T& get_or_create(Make&& make) {
    std::call_once(once_, [&] {
      object_ = Erased(make().release(), [](void* p) { delete static_cast<T*>(p); });
    });
    return *static_cast<T*>(object_.get());
  }

 private:
  using Erased = std::unique_ptr<void, void (*)(void*)>;
  std::once_flag once_;
  Erased object_{nullptr, nullptr};
};

}  // namespace sgl::backend
