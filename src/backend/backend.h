// Backend: device selection helpers shared by every layer above core.
#pragma once

#include <cstddef>
#include <memory>

#include "core/allocator.h"
#include "core/device.h"
#include "core/status.h"
#include "core/virtual_memory.h"

namespace sgl::backend {

// Memory a device reports: free and total bytes (host: available / total RAM).
struct MemoryInfo {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
};

Result<MemoryInfo> memory_info(Device device);

// Host memory for staging copies to/from `device`: pinned for GPUs, plain on CPU.
std::unique_ptr<Allocator> create_staging_allocator(Device device);

// Address ranges on `device` whose memory can be given back and taken again (the memory saver's
// ReleasableAllocator).
std::unique_ptr<VirtualMemory> create_virtual_memory(Device device);

// Checks that `device` can be used by this binary (built with CUDA, a GPU present).
Status check_device_available(Device device);

// cudaProfilerStart (on) or cudaProfilerStop (off): the range that nsys
// (--capture-range=cudaProfilerApi) or ncu (--profile-from-start off) captures. Unimplemented
// for the CPU.
Status set_device_profiler_capture(Device device, bool on);

}  // namespace sgl::backend
