// Thin CUDA runtime wrappers used by the backend (no CUDA headers leak from here).
#pragma once

#include "backend/backend.h"
#include "backend/stream.h"

namespace sgl::backend::cuda {

Result<MemoryInfo> memory_info(int device_index);
// Streaming multiprocessors of a device (valid index).
int multiprocessor_count(int device_index);
Status check_device(int device_index);
void synchronize(Stream stream);
// cudaProfilerStart / cudaProfilerStop on the device.
Status set_profiler_capture(int device_index, bool on);

}  // namespace sgl::backend::cuda
