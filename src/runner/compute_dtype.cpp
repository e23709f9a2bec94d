// parse_compute_dtype and parse_kv_cache_dtype.
#include "runner/compute_dtype.h"

#include <optional>

namespace sgl::runner {

Result<DType> parse_compute_dtype(const std::string& name, Device device) {
  if (name == "auto") return device.is_cpu() ? DType::kF32 : DType::kBF16;
  const std::optional<DType> dtype = parse_dtype(name);
  if (dtype == DType::kBF16 && device.is_cpu()) {
    return unimplemented("--dtype bfloat16 on the CPU (it computes in f32)");
  }
  if (dtype == DType::kF16) {
    return unimplemented("--dtype " + name +
                         ": float16 compute is not implemented (use bfloat16 or float32)");
  }
  if (dtype != DType::kF32 && dtype != DType::kBF16) {
    return invalid_argument("--dtype '" + name + "' (expected auto, bfloat16 or float32)");
  }
  return *dtype;
}

Result<DType> parse_kv_cache_dtype(const std::string& name, DType compute) {
  if (name == "auto") return compute;
  if (name == "fp8_e4m3") return DType::kF8E4M3;
  if (name == "fp8_e5m2") return DType::kF8E5M2;
  if (name == "bf16" || name == "bfloat16") {
    if (compute == DType::kBF16) return compute;
    return unimplemented("--kv-cache-dtype " + name + " beside --dtype " +
                         std::string(dtype_name(compute)) +
                         ": the KV cache is kept in the compute dtype or in FP8");
  }
  return invalid_argument("--kv-cache-dtype '" + name +
                          "' (expected auto, fp8_e4m3, fp8_e5m2 or bfloat16)");
}

}  // namespace sgl::runner
