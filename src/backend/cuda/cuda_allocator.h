// CudaAllocator: device memory through cudaMalloc; PinnedAllocator: page-locked host memory.
#pragma once

#include "core/allocator.h"

namespace sgl::backend {

class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(int device_index) : device_index_(device_index) {}
  Device device() const override { return Device::cuda(device_index_); }
  void* allocate(size_t bytes) override;
  void deallocate(void* ptr) override;

 private:
  int device_index_;
};

// Host memory the GPU can copy to and from asynchronously.
class PinnedAllocator final : public Allocator {
 public:
  Device device() const override { return Device::cpu(); }
  void* allocate(size_t bytes) override;
  void deallocate(void* ptr) override;
};

}  // namespace sgl::backend
