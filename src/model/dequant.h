// Dequantization of ggml tensor data (plain floats and block-quantized types) to f32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "core/status.h"
#include "kernels/convert_stored.h"
#include "model/ggml_type.h"

namespace sgl::model {

// The kernels::StoredFormat whose bytes are `type`'s as a GGUF file stores them (F32, F16, BF16,
// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K), so they can be converted on the
// device they are loaded to; nullopt for every other type.
std::optional<kernels::StoredFormat> stored_format(GgmlType type);

// True when dequantize() decodes `type`: the stored_format() types and F64.
bool can_dequantize(GgmlType type);

// Decodes `numel` elements of `type` from `src` (ggml's block layout, `src_bytes` bytes, no
// alignment needed) into dst[0, numel), as kernels::convert_stored converts on the host (and,
// bit for bit, on a GPU). `numel` must be a whole number of blocks and `src_bytes` exactly the
// bytes those blocks take; otherwise, or for a type can_dequantize() refuses, returns an error
// and leaves dst unspecified.
Status dequantize(GgmlType type, const uint8_t* src, size_t src_bytes, int64_t numel, float* dst);

}  // namespace sgl::model
