// Host FP8 (OCP formats, as torch and CUDA's cuda_fp8.h name them):
// - E4M3 ("e4m3fn", torch.float8_e4m3fn): 1 sign, 4 exponent (bias 7), 3 mantissa bits, no
//   infinities, S.1111.111 is NaN; the largest finite value is 448.
// - E5M2 (torch.float8_e5m2): 1 sign, 5 exponent (bias 15), 2 mantissa bits, IEEE-like
//   (infinities, NaNs); the largest finite value is 57344.
// Encoding rounds to nearest, ties to even, and saturates to the largest finite value, as
// CUDA's __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...) does, so host and device quantize alike.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/dtype.h"

namespace sgl {

inline float fp8_e4m3_to_float(uint8_t bits) {
  const int exponent = (bits >> 3) & 0xf;
  const int mantissa = bits & 0x7;
  const float sign = (bits & 0x80) != 0 ? -1.0f : 1.0f;
  if (exponent == 0xf && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);  // subnormal
  return sign * std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
}

inline float fp8_e5m2_to_float(uint8_t bits) {
  const int exponent = (bits >> 2) & 0x1f;
  const int mantissa = bits & 0x3;
  const float sign = (bits & 0x80) != 0 ? -1.0f : 1.0f;
  if (exponent == 0x1f) {
    return mantissa == 0 ? sign * std::numeric_limits<float>::infinity()
                         : std::numeric_limits<float>::quiet_NaN();
  }
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -16);  // subnormal
  return sign * std::ldexp(static_cast<float>(4 + mantissa), exponent - 17);
}

namespace fp8_detail {

// x's nearest value (ties to even) among sign * m * 2^(e - mantissa_bits) with m in
// [2^mantissa_bits, 2^(mantissa_bits + 1)) for normal exponents e >= min_exponent, and the
// subnormals below; saturated to max_finite. Returns the code: sign, biased exponent, mantissa.
inline uint8_t encode(float x, int mantissa_bits, int min_exponent, int bias, float max_finite,
                      uint8_t nan_code) {
  if (std::isnan(x)) return nan_code;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  float a = std::fabs(x);
  if (a >= max_finite) a = max_finite;  // saturate (infinities too)
  int exponent = 0;
  std::frexp(a, &exponent);                         // a = f * 2^exponent, f in [0.5, 1)
  exponent = std::max(exponent - 1, min_exponent);  // a's binade, subnormals in the lowest
  // Units of the last place at this binade; nearbyint rounds ties to even in the default mode.
  const float ulp = std::ldexp(1.0f, exponent - mantissa_bits);
  auto units = static_cast<int>(std::nearbyint(a / ulp));
  if (units == 0) return sign;
  if (units >= (2 << mantissa_bits)) {  // rounded up into the next binade
    units >>= 1;
    ++exponent;
  }
  if (units < (1 << mantissa_bits)) return static_cast<uint8_t>(sign | units);  // subnormal
  const int biased = exponent + bias;
  return static_cast<uint8_t>(sign | (biased << mantissa_bits) | (units - (1 << mantissa_bits)));
}

}  // namespace fp8_detail

inline uint8_t float_to_fp8_e4m3(float x) { return fp8_detail::encode(x, 3, -6, 7, 448.0f, 0x7f); }

inline uint8_t float_to_fp8_e5m2(float x) {
  return fp8_detail::encode(x, 2, -14, 15, 57344.0f, 0x7f);
}

// Every byte's value under kDecode, for converting whole tensors.
template <float (*kDecode)(uint8_t)>
const std::array<float, 256>& fp8_table_of() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int b = 0; b < 256; ++b) t[b] = kDecode(static_cast<uint8_t>(b));
    return t;
  }();
  return table;
}

inline const std::array<float, 256>& fp8_e4m3_table() { return fp8_table_of<fp8_e4m3_to_float>(); }
inline const std::array<float, 256>& fp8_e5m2_table() { return fp8_table_of<fp8_e5m2_to_float>(); }

// The table and the encoder of an FP8 dtype (DType::kF8E4M3 or kF8E5M2).
inline const std::array<float, 256>& fp8_table(DType dtype) {
  return dtype == DType::kF8E4M3 ? fp8_e4m3_table() : fp8_e5m2_table();
}
inline uint8_t float_to_fp8(DType dtype, float x) {
  return dtype == DType::kF8E4M3 ? float_to_fp8_e4m3(x) : float_to_fp8_e5m2(x);
}

}  // namespace sgl
