// Host FP8 encoding (core/fp8.h) as CUDA's saturating conversion behaves: every finite code
// round-trips, values round to the nearer code with ties to the even code, out-of-range values
// saturate to the largest finite value, NaN stays NaN; and E5M2's decoding.
#include "core/fp8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace sgl {
namespace {

struct Format {
  std::string name;
  float (*decode)(uint8_t);
  uint8_t (*encode)(float);
  float max_finite;
  bool has_inf;
};

const Format kFormats[] = {{"e4m3", fp8_e4m3_to_float, float_to_fp8_e4m3, 448.f, false},
                           {"e5m2", fp8_e5m2_to_float, float_to_fp8_e5m2, 57344.f, true}};

TEST(Fp8, E5M2Decodes) {
  EXPECT_EQ(fp8_e5m2_to_float(0x3c), 1.0f);  // exponent 15 = bias
  EXPECT_EQ(fp8_e5m2_to_float(0x3e), 1.5f);
  EXPECT_EQ(fp8_e5m2_to_float(0xc0), -2.0f);
  EXPECT_EQ(fp8_e5m2_to_float(0x7b), 57344.0f);
  EXPECT_EQ(fp8_e5m2_to_float(0x01), std::ldexp(1.0f, -16));  // the smallest subnormal
  EXPECT_EQ(fp8_e5m2_to_float(0x7c), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fp8_e5m2_to_float(0x7f)));
}

TEST(Fp8, EveryFiniteCodeRoundTrips) {
  for (const Format& f : kFormats) {
    for (int b = 0; b < 256; ++b) {
      const float x = f.decode(static_cast<uint8_t>(b));
      if (!std::isfinite(x)) continue;
      const uint8_t code = f.encode(x);
      // -0 and +0 are both zero; every other value has one code.
      EXPECT_EQ(f.decode(code), x) << f.name << " code " << b;
      if (x != 0) EXPECT_EQ(code, b) << f.name << " value " << x;
    }
  }
}

TEST(Fp8, RoundsToNearestTiesToEven) {
  for (const Format& f : kFormats) {
    // Between each pair of neighbouring positive finite codes: a quarter of the way rounds
    // down, three quarters up, the midpoint to the code with an even mantissa.
    for (int b = 0; b < 0x7f; ++b) {
      const float lo = f.decode(static_cast<uint8_t>(b));
      const float hi = f.decode(static_cast<uint8_t>(b + 1));
      if (!std::isfinite(hi) || !std::isfinite(lo)) continue;
      const float mid = lo + (hi - lo) / 2;
      EXPECT_EQ(f.encode(lo + (hi - lo) / 4), b) << f.name;
      EXPECT_EQ(f.encode(lo + 3 * (hi - lo) / 4), b + 1) << f.name;
      EXPECT_EQ(f.encode(mid), (b % 2 == 0) ? b : b + 1)
          << f.name << " between " << lo << ", " << hi;
      EXPECT_EQ(f.encode(-mid), 0x80 | ((b % 2 == 0) ? b : b + 1)) << f.name;
    }
  }
}

TEST(Fp8, SaturatesAndKeepsNan) {
  for (const Format& f : kFormats) {
    for (float x :
         {f.max_finite * 1.01f, f.max_finite * 4, 1e30f, std::numeric_limits<float>::infinity()}) {
      EXPECT_EQ(f.decode(f.encode(x)), f.max_finite) << f.name << " " << x;
      EXPECT_EQ(f.decode(f.encode(-x)), -f.max_finite) << f.name << " " << -x;
    }
    EXPECT_TRUE(std::isnan(f.decode(f.encode(std::numeric_limits<float>::quiet_NaN()))));
    EXPECT_EQ(f.decode(f.encode(1e-30f)), 0.f) << f.name;  // below half the smallest subnormal
  }
}

}  // namespace
}  // namespace sgl
