// Converting weights from the format a file stores them in (plain floats or quantized blocks)
// to a compute dtype on the destination's device, so a loader can upload stored bytes as they
// are and convert where they land.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// Stored formats the device converts from. Q8_0 is ggml's: blocks of 32 values, each an f16
// scale d followed by 32 int8 quants q (value = q * d).
enum class StoredFormat : uint8_t { kF32, kF16, kBF16, kQ8_0 };

std::string_view stored_format_name(StoredFormat format);
int64_t stored_block_elems(StoredFormat format);  // values per block: 1, or 32 for Q8_0
int64_t stored_block_bytes(StoredFormat format);  // bytes per block
// Bytes of `n` values; n must be a whole number of blocks.
size_t stored_bytes(StoredFormat format, int64_t n);

// dst = the dst.numel() values stored at `src` in `format`. dst is contiguous f32, bf16 or f16;
// `src` holds stored_bytes(format, dst.numel()) bytes on dst's device (no alignment needed).
// Rounds to dst's dtype to nearest-even, as the host conversions do, so both paths agree.
void convert_stored(const void* src, StoredFormat format, const Tensor& dst,
                    backend::Stream stream);

}  // namespace sgl::kernels
