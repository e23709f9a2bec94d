// parse_compute_dtype.
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

}  // namespace sgl::runner
