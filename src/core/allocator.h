// Allocator interface and the host allocator. Device allocators live in backend/.
#pragma once

#include <cstddef>

#include "core/device.h"

namespace sgl {

// Hands out raw memory on one device. Implementations are thread-safe.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Device device() const = 0;
  // Returns memory of at least `bytes` (nullptr only for bytes == 0); aborts when out of memory.
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* ptr) = 0;
};

// 64-byte aligned host memory.
class CpuAllocator final : public Allocator {
 public:
  Device device() const override { return Device::cpu(); }
  void* allocate(size_t bytes) override;
  void deallocate(void* ptr) override;
};

// A stateless host allocator shared by code that just needs host scratch memory.
Allocator& cpu_allocator();

}  // namespace sgl
