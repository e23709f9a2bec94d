// The dtype a model computes in for ModelRunnerOptions::dtype (--dtype) on a device: "auto" is
// f32 on the CPU and bf16 on a GPU; what the device cannot compute in is an error.
#pragma once

#include <string>

#include "core/device.h"
#include "core/dtype.h"
#include "core/status.h"

namespace sgl::runner {

Result<DType> parse_compute_dtype(const std::string& name, Device device);

}  // namespace sgl::runner
