// The CUDA devices this process sees, and the calling thread's current one (multi-GPU ranks are
// threads: each makes its GPU current before it launches work there).
#pragma once

#include "core/device.h"

namespace sgl::backend {

// Visible CUDA devices (0 without CUDA or without a usable driver).
int cuda_device_count();

// Makes `device` the calling thread's current CUDA device (no-op for the CPU).
void set_current_device(Device device);

}  // namespace sgl::backend
