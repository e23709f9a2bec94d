// The two ceilings a benchmark is measured against (METHOD.md): the device's copy bandwidth
// (a large device-to-device copy, bytes read + written) and its bf16 GEMM rate (a large product
// through kernels::linear, i.e. cuBLAS).
#pragma once

#include <functional>

#include "backend/stream.h"
#include "core/allocator.h"
#include "core/status.h"

namespace sgl::app {

struct DeviceFloors {
  double copy_bytes_per_s = 0;  // read + write bytes per second
  double gemm_flops_per_s = 0;  // bf16 in, f32 accumulate
};

// Median seconds per call of `op` over `rounds` rounds of `calls` back-to-back launches on
// `stream` (after one warm-up call), timed on the host around a synchronize.
double median_seconds(const std::function<void()>& op, backend::Stream stream, int calls,
                      int rounds);

// Runs each probe with warm-up and takes the median of several timed rounds on `stream`.
Result<DeviceFloors> measure_device_floors(Allocator& device_allocator, backend::Stream stream);

}  // namespace sgl::app
