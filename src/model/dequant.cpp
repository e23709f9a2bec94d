// Dequantization: checks sizes, then decodes with kernels::convert_stored on the host (F64,
// which no device path stores, is converted here).
#include "model/dequant.h"

#include <cstring>
#include <string>

#include "core/tensor.h"

namespace sgl::model {

std::optional<kernels::StoredFormat> stored_format(GgmlType type) {
  using kernels::StoredFormat;
  switch (type) {
    case GgmlType::kF32:
      return StoredFormat::kF32;
    case GgmlType::kF16:
      return StoredFormat::kF16;
    case GgmlType::kBF16:
      return StoredFormat::kBF16;
    case GgmlType::kQ4_0:
      return StoredFormat::kQ4_0;
    case GgmlType::kQ4_1:
      return StoredFormat::kQ4_1;
    case GgmlType::kQ5_0:
      return StoredFormat::kQ5_0;
    case GgmlType::kQ5_1:
      return StoredFormat::kQ5_1;
    case GgmlType::kQ8_0:
      return StoredFormat::kQ8_0;
    case GgmlType::kQ2_K:
      return StoredFormat::kQ2_K;
    case GgmlType::kQ3_K:
      return StoredFormat::kQ3_K;
    case GgmlType::kQ4_K:
      return StoredFormat::kQ4_K;
    case GgmlType::kQ5_K:
      return StoredFormat::kQ5_K;
    case GgmlType::kQ6_K:
      return StoredFormat::kQ6_K;
    default:
      return std::nullopt;
  }
}

bool can_dequantize(GgmlType type) {
  return type == GgmlType::kF64 || stored_format(type).has_value();
}

Status dequantize(GgmlType type, const uint8_t* src, size_t src_bytes, int64_t numel, float* dst) {
  std::optional<GgmlTypeTraits> traits = ggml_type_traits(static_cast<uint32_t>(type));
  if (!traits || !can_dequantize(type)) {
    return unimplemented("cannot dequantize ggml type " + ggml_type_name(type));
  }
  if (numel < 0 || numel % traits->block_size != 0) {
    return invalid_argument(std::to_string(numel) + " elements of " + ggml_type_name(type) +
                            " are not a whole number of " + std::to_string(traits->block_size) +
                            "-element blocks");
  }
  const int64_t blocks = numel / traits->block_size;
  const auto expected = static_cast<uint64_t>(blocks) * static_cast<uint64_t>(traits->type_size);
  if (src_bytes != expected) {
    return invalid_argument(std::to_string(numel) + " elements of " + ggml_type_name(type) +
                            " take " + std::to_string(expected) + " bytes, got " +
                            std::to_string(src_bytes));
  }
  if (type == GgmlType::kF64) {
    for (int64_t i = 0; i < numel; ++i) {
      double v;
      std::memcpy(&v, src + 8 * i, 8);
      dst[i] = static_cast<float>(v);
    }
    return Status::ok_status();
  }
  kernels::convert_stored(src, *stored_format(type), Tensor(dst, DType::kF32, {numel}),
                          backend::Stream::cpu());
  return Status::ok_status();
}

}  // namespace sgl::model
