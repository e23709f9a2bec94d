// Device copies of a test's host vectors, for a kernel's arguments, and back again: the CUDA
// builds of the tests that check a kernel against its host twin.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "backend/stream.h"
#include "core/allocator.h"
#include "core/buffer.h"
#include "kernels/copy.h"

namespace sgl::test {

class DeviceVectors {
 public:
  DeviceVectors(Allocator& gpu, backend::Stream stream) : gpu_(gpu), stream_(stream) {}

  // A device copy of `v` (i32 or f32), which must outlive this: its address.
  template <typename T>
  T* operator()(std::vector<T>& v) {
    static_assert(std::is_same_v<T, int32_t> || std::is_same_v<T, float>);
    const DType dtype = std::is_same_v<T, float> ? DType::kF32 : DType::kI32;
    const auto n = static_cast<int64_t>(v.size());
    Copy& c = copies_.emplace_back(Copy{v.data(), Buffer(gpu_, dtype, {n})});
    kernels::copy(Tensor(v.data(), dtype, {n}), c.device.tensor(), stream_);
    return c.device.template data<T>();
  }
  // Every device copy back over its vector.
  void copy_back() {
    for (Copy& c : copies_) {
      const Tensor& d = c.device.tensor();
      kernels::copy(d, Tensor(c.host, d.dtype(), {d.numel()}), stream_);
    }
  }

 private:
  struct Copy {
    void* host;
    Buffer device;
  };
  Allocator& gpu_;
  backend::Stream stream_;
  std::vector<Copy> copies_;
};

}  // namespace sgl::test
