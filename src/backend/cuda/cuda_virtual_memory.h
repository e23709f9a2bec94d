// CudaVirtualMemory: GPU address ranges over CUDA's virtual memory management (cuMemCreate /
// cuMemMap), for the memory saver: a decommitted range's physical memory is back in the
// driver's hands (cudaMemGetInfo counts it free) while kernels and graphs keep its addresses.
#pragma once

#include "core/virtual_memory.h"

namespace sgl::backend {

class CudaVirtualMemory final : public VirtualMemory {
 public:
  explicit CudaVirtualMemory(int device_index);
  Device device() const override { return Device::cuda(device_index_); }
  size_t granularity() const override { return granularity_; }
  void* reserve(size_t bytes) override;
  void unreserve(void* base, size_t bytes) override;
  bool commit(void* base, size_t bytes) override;
  void decommit(void* base, size_t bytes) override;
  void* allocate_host(size_t bytes) override;
  void free_host(void* host) override;
  void copy_to_host(void* host, const void* src, size_t bytes) override;
  void copy_from_host(void* dst, const void* host, size_t bytes) override;

 private:
  struct DriverApi;  // the driver's cuMem* entry points (no link against libcuda)
  const DriverApi& api() const;

  int device_index_;
  size_t granularity_ = 0;
};

}  // namespace sgl::backend
