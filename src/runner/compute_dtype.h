// The dtype a model computes in for ModelRunnerOptions::dtype (--dtype) on a device: "auto" is
// f32 on the CPU and bf16 on a GPU; what the device cannot compute in is an error.
#pragma once

#include <string>

#include "core/device.h"
#include "core/dtype.h"
#include "core/status.h"

namespace sgl::runner {

Result<DType> parse_compute_dtype(const std::string& name, Device device);

// The KV cache's stored dtype for ModelRunnerOptions::kv_cache_dtype (SGLang's --kv-cache-dtype)
// beside compute dtype `compute`: "auto" is `compute`; "fp8_e4m3" / "fp8_e5m2" store FP8 codes
// (attention/kv_pool.h); "bf16" / "bfloat16" name the compute dtype where it is bf16.
Result<DType> parse_kv_cache_dtype(const std::string& name, DType compute);

}  // namespace sgl::runner
