// DType: element types of tensors, their sizes and names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sgl {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kI32,
  kI64,
  kF8E4M3,  // FP8 checkpoints' weights (dequantized at load) and --kv-cache-dtype fp8_e4m3
  kF8E5M2,  // --kv-cache-dtype fp8_e5m2
  kBool,    // one byte; a checkpoint's masks (EAGLE-3's t2d), read on the host only
};

size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);                 // "f32", "bf16", ...
std::optional<DType> parse_dtype(std::string_view name);  // accepts our names and torch's

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::kF32;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::kI32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::kI64;
}

}  // namespace sgl
