// Host decoding of FP8 E4M3 (OCP "e4m3fn", torch.float8_e4m3fn): 1 sign, 4 exponent (bias 7)
// and 3 mantissa bits, no infinities, S.1111.111 is NaN; the largest finite value is 448.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

namespace sgl {

inline float fp8_e4m3_to_float(uint8_t bits) {
  const int exponent = (bits >> 3) & 0xf;
  const int mantissa = bits & 0x7;
  const float sign = (bits & 0x80) != 0 ? -1.0f : 1.0f;
  if (exponent == 0xf && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);  // subnormal
  return sign * std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
}

// Every byte's value, for converting whole tensors.
inline const std::array<float, 256>& fp8_e4m3_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int b = 0; b < 256; ++b) t[b] = fp8_e4m3_to_float(static_cast<uint8_t>(b));
    return t;
  }();
  return table;
}

}  // namespace sgl
