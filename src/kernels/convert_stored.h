// Converting weights from the format a file stores them in (plain floats or quantized blocks)
// to a compute dtype on the destination's device, so a loader can upload stored bytes as they
// are and convert where they land.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// Stored formats the device converts from: plain floats and ggml's block quantizations, blocks
// of 32 values (Q4_0 ... Q8_0) or 256-value super-blocks (the k-quants Q2_K ... Q6_K), each a
// few f16 scales and packed quants. kernels/cpu/gguf_blocks.cpp and
// kernels/stored_values.h decode them (host and device).
enum class StoredFormat : uint8_t {
  kF32,
  kF16,
  kBF16,
  kQ4_0,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kQ8_0,
  kQ2_K,
  kQ3_K,
  kQ4_K,
  kQ5_K,
  kQ6_K,
};
inline constexpr std::array<StoredFormat, 13> kStoredFormats = {
    StoredFormat::kF32,  StoredFormat::kF16,  StoredFormat::kBF16, StoredFormat::kQ4_0,
    StoredFormat::kQ4_1, StoredFormat::kQ5_0, StoredFormat::kQ5_1, StoredFormat::kQ8_0,
    StoredFormat::kQ2_K, StoredFormat::kQ3_K, StoredFormat::kQ4_K, StoredFormat::kQ5_K,
    StoredFormat::kQ6_K};

std::string_view stored_format_name(StoredFormat format);  // "f32", "q8_0", "q4_k", ...
int64_t stored_block_elems(StoredFormat format);           // values per block: 1, 32 or 256
int64_t stored_block_bytes(StoredFormat format);           // bytes per block
// Bytes of `n` values; n must be a whole number of blocks.
size_t stored_bytes(StoredFormat format, int64_t n);

// dst = the dst.numel() values stored at `src` in `format`. dst is contiguous f32, bf16 or f16;
// `src` holds stored_bytes(format, dst.numel()) bytes on dst's device (no alignment needed).
// Rounds to dst's dtype to nearest-even, as the host conversions do, so both paths agree.
void convert_stored(const void* src, StoredFormat format, const Tensor& dst,
                    backend::Stream stream);

}  // namespace sgl::kernels
