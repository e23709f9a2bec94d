// Random stored bytes of every kernels::StoredFormat, for conversion tests: finite plain floats,
// and quantized blocks of random bits whose f16 scale fields are finite (zero, subnormal,
// negative and large ones included).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/convert_stored.h"

namespace sgl::kernels::test {

// Byte offsets of the f16 scale fields (d, and m / dmin where the format has one) in a block.
inline std::vector<int> f16_scale_offsets(StoredFormat format) {
  switch (format) {
    case StoredFormat::kQ4_0:
    case StoredFormat::kQ5_0:
    case StoredFormat::kQ8_0:
      return {0};
    case StoredFormat::kQ4_1:
    case StoredFormat::kQ5_1:
    case StoredFormat::kQ4_K:
    case StoredFormat::kQ5_K:
      return {0, 2};
    case StoredFormat::kQ2_K:
      return {80, 82};
    case StoredFormat::kQ3_K:
      return {108};
    case StoredFormat::kQ6_K:
      return {208};
    default:
      return {};
  }
}

// A finite f16 scale: mostly +-2^-12 .. 2^0; 1 in 16 zero or subnormal; 1 in 32 as large as
// 2^15, so some values leave f16's range (and must become inf alike on every path).
inline uint16_t random_f16_scale(std::mt19937& rng) {
  const uint32_t kind = rng() % 32;
  if (kind < 2) return static_cast<uint16_t>(rng() & 0x83ffu);  // sign, zero exponent
  const float exponent = kind == 2 ? 8.f + static_cast<float>(rng() % 8)
                                   : -12.f + 0.01f * static_cast<float>(rng() % 1200);
  const float sign = (rng() & 1) != 0 ? -1.f : 1.f;
  return float_to_f16(sign * std::exp2(exponent));
}

// `n` values (whole blocks) stored in `format`: plain floats drawn from N(0, 1), quantized
// blocks as random bytes with random_f16_scale() scale fields.
inline std::vector<uint8_t> random_stored(StoredFormat format, int64_t n, std::mt19937& rng) {
  std::vector<uint8_t> out(stored_bytes(format, n));
  const std::vector<int> scales = f16_scale_offsets(format);
  if (scales.empty()) {
    std::normal_distribution<float> dist(0.f, 1.f);
    for (int64_t i = 0; i < n; ++i) {
      const float v = dist(rng);
      if (format == StoredFormat::kF32) {
        std::memcpy(out.data() + 4 * i, &v, 4);
      } else {
        const uint16_t h = format == StoredFormat::kF16 ? float_to_f16(v) : float_to_bf16(v);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
    }
    return out;
  }
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  const int64_t block_bytes = stored_block_bytes(format);
  for (size_t block = 0; block < out.size(); block += static_cast<size_t>(block_bytes)) {
    for (int offset : scales) {
      const uint16_t h = random_f16_scale(rng);
      out[block + offset] = static_cast<uint8_t>(h & 0xff);
      out[block + offset + 1] = static_cast<uint8_t>(h >> 8);
    }
  }
  return out;
}

}  // namespace sgl::kernels::test
