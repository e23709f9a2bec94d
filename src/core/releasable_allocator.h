// ReleasableAllocator: an allocator whose memory can be given back to the device and taken
// again at the same addresses (SGLang's --enable-memory-saver: /release_memory_occupation and
// /resume_memory_occupation). Buffers, kernels' cached pointers and CUDA graphs over its
// allocations stay valid across a release; only the contents go, unless kept on the host.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "core/allocator.h"
#include "core/status.h"
#include "core/virtual_memory.h"

namespace sgl {

class ReleasableAllocator final : public Allocator {
 public:
  explicit ReleasableAllocator(std::unique_ptr<VirtualMemory> memory);
  ~ReleasableAllocator() override;
  ReleasableAllocator(const ReleasableAllocator&) = delete;
  ReleasableAllocator& operator=(const ReleasableAllocator&) = delete;

  Device device() const override { return memory_->device(); }
  // 256-byte aligned. Not while released.
  void* allocate(size_t bytes) override;
  void deallocate(void* ptr) override;

  // Gives the device memory behind every live allocation back; with `keep_contents` it is
  // copied to host memory first, for resume() to write back. Returns the device bytes given
  // back. Nothing may touch the allocations until resume() (on the host they fault).
  size_t release(bool keep_contents);
  // Backs the allocations again at their addresses: with their kept contents, else with
  // unspecified ones (zeros on the host). kResourceExhausted when the device has not the
  // memory (something else took it meanwhile): then nothing changed and it stays released.
  Status resume();
  bool released() const;
  // Device bytes behind the live allocations (while released, what resume() takes back).
  size_t committed_bytes() const;

 private:
  // A reserved range: one large allocation, or a slab small ones are carved from in order.
  struct Region {
    size_t bytes = 0;  // reserved (and, unless released, committed)
    size_t used = 0;   // bytes handed out from its start
    int live = 0;      // allocations not yet deallocated
    // Its first `used` bytes while released with keep_contents, in VirtualMemory::allocate_host's
    // memory.
    void* kept = nullptr;
  };
  using Regions = std::map<std::byte*, Region>;

  std::byte* new_region(size_t bytes);
  void free_region(Regions::iterator it);
  void drop_kept(Region& region);
  size_t reserved_bytes() const;  // every region's (hold mutex_)

  std::unique_ptr<VirtualMemory> memory_;
  size_t slab_bytes_;  // small allocations (under a quarter of this) share slabs
  mutable std::mutex mutex_;
  Regions regions_;            // by base address
  std::byte* slab_ = nullptr;  // the slab small allocations come from now
  bool released_ = false;
};

}  // namespace sgl
