// Dequantization of ggml tensor data (plain floats and block-quantized types) to f32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "model/ggml_type.h"

namespace sgl::model {

// True when dequantize() decodes `type`: F32, F16, BF16, F64, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
bool can_dequantize(GgmlType type);

// Decodes `numel` elements of `type` from `src` (ggml's block layout, `src_bytes` bytes, no
// alignment needed) into dst[0, numel). `numel` must be a whole number of blocks and `src_bytes`
// exactly the bytes those blocks take; otherwise, or for a type can_dequantize() refuses, returns
// an error and leaves dst unspecified.
Status dequantize(GgmlType type, const uint8_t* src, size_t src_bytes, int64_t numel, float* dst);

}  // namespace sgl::model
