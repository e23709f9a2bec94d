// Tests for dequantization: hand-built blocks with known values for every supported ggml type,
// plus fixed pseudo-random blocks checked against values from llama.cpp's gguf-py reference.
#include "model/dequant.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/half.h"
#include "kernels/random_stored.h"
#include "model/ggml_type.h"
#include "model_test_util.h"

namespace sgl::model {
namespace {

using test_util::expect_status;

void put_f16(std::vector<uint8_t>& block, size_t offset, float value) {
  const uint16_t bits = float_to_f16(value);
  std::memcpy(block.data() + offset, &bits, 2);
}

std::vector<float> decode(GgmlType type, const std::vector<uint8_t>& bytes, int64_t numel) {
  std::vector<float> out(static_cast<size_t>(numel), -999.0f);
  Status s = dequantize(type, bytes.data(), bytes.size(), numel, out.data());
  EXPECT_TRUE(s.ok()) << s.to_string();
  return out;
}

// ---- plain floats ----

TEST(DequantTest, PlainFloats) {
  const std::vector<float> f32 = {1.5f, -2.25f, 0.0f};
  std::vector<uint8_t> bytes(12);
  std::memcpy(bytes.data(), f32.data(), 12);
  EXPECT_EQ(decode(GgmlType::kF32, bytes, 3), f32);

  const std::vector<uint16_t> f16 = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x3555};
  bytes.assign(10, 0);
  std::memcpy(bytes.data(), f16.data(), 10);
  const std::vector<float> h = decode(GgmlType::kF16, bytes, 5);
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.0f);
  EXPECT_EQ(h[2], 65504.0f);
  EXPECT_EQ(h[3], 5.9604644775390625e-08f);  // smallest subnormal, 2^-24
  EXPECT_FLOAT_EQ(h[4], 0.33325195f);

  const std::vector<uint16_t> bf16 = {0x3f80, 0xc040, 0x4049};
  bytes.assign(6, 0);
  std::memcpy(bytes.data(), bf16.data(), 6);
  EXPECT_EQ(decode(GgmlType::kBF16, bytes, 3), (std::vector<float>{1.0f, -3.0f, 3.140625f}));

  const std::vector<double> f64 = {0.5, -1e10};
  bytes.assign(16, 0);
  std::memcpy(bytes.data(), f64.data(), 16);
  EXPECT_EQ(decode(GgmlType::kF64, bytes, 2), (std::vector<float>{0.5f, -1e10f}));
}

// ---- 32-element blocks ----

// Nibble bytes where element j (j < 16) is j and element j + 16 is 15 - j.
void put_ramp_nibbles(std::vector<uint8_t>& block, size_t offset) {
  for (int j = 0; j < 16; ++j) block[offset + j] = static_cast<uint8_t>(j | (15 - j) << 4);
}

TEST(DequantTest, Q4_0) {
  std::vector<uint8_t> b(18);
  put_f16(b, 0, 0.5f);
  put_ramp_nibbles(b, 2);
  const std::vector<float> y = decode(GgmlType::kQ4_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (j - 8) * 0.5f) << j;
    EXPECT_EQ(y[j + 16], (15 - j - 8) * 0.5f) << j;
  }
}

TEST(DequantTest, Q4_1) {
  std::vector<uint8_t> b(20);
  put_f16(b, 0, 0.25f);
  put_f16(b, 2, -1.0f);
  put_ramp_nibbles(b, 4);
  const std::vector<float> y = decode(GgmlType::kQ4_1, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], j * 0.25f - 1.0f) << j;
    EXPECT_EQ(y[j + 16], (15 - j) * 0.25f - 1.0f) << j;
  }
}

// Q5 high bits: element e's fifth bit is bit e of the little-endian u32.
TEST(DequantTest, Q5_0) {
  std::vector<uint8_t> b(22);
  put_f16(b, 0, 2.0f);
  const uint32_t qh = 0x80010003u;  // elements 0, 1, 16 and 31 have the fifth bit
  std::memcpy(b.data() + 2, &qh, 4);
  put_ramp_nibbles(b, 6);
  const std::vector<float> y = decode(GgmlType::kQ5_0, b, 32);
  EXPECT_EQ(y[0], (0 + 16 - 16) * 2.0f);
  EXPECT_EQ(y[1], (1 + 16 - 16) * 2.0f);
  EXPECT_EQ(y[2], (2 - 16) * 2.0f);
  EXPECT_EQ(y[15], (15 - 16) * 2.0f);
  EXPECT_EQ(y[16], (15 + 16 - 16) * 2.0f);
  EXPECT_EQ(y[17], (14 - 16) * 2.0f);
  EXPECT_EQ(y[31], (0 + 16 - 16) * 2.0f);
}

TEST(DequantTest, Q5_1) {
  std::vector<uint8_t> b(24);
  put_f16(b, 0, 0.5f);
  put_f16(b, 2, 1.0f);
  const uint32_t qh = 0xffff0000u;  // every high-half element has the fifth bit
  std::memcpy(b.data() + 4, &qh, 4);
  put_ramp_nibbles(b, 8);
  const std::vector<float> y = decode(GgmlType::kQ5_1, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], j * 0.5f + 1.0f) << j;
    EXPECT_EQ(y[j + 16], (15 - j + 16) * 0.5f + 1.0f) << j;
  }
}

TEST(DequantTest, Q8_0TwoBlocks) {
  std::vector<uint8_t> b(68);
  put_f16(b, 0, 0.125f);
  put_f16(b, 34, -1.0f);
  for (int j = 0; j < 32; ++j) {
    b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
    b[36 + j] = static_cast<uint8_t>(static_cast<int8_t>(j == 0 ? -128 : 127 - j));
  }
  const std::vector<float> y = decode(GgmlType::kQ8_0, b, 64);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], (j - 16) * 0.125f) << j;
  EXPECT_EQ(y[32], 128.0f);
  for (int j = 1; j < 32; ++j) EXPECT_EQ(y[32 + j], -(127.0f - j)) << j;
}

// ---- k-quants (256-element super-blocks) ----

// Packs eight 6-bit scales and mins into Q4_K / Q5_K's 12 bytes: bytes 0..3 hold scales 0..3
// (low 6 bits) with the top bits of scales 4..7; bytes 4..7 the same for mins; bytes 8..11 the
// low nibbles of scales 4..7 (low) and mins 4..7 (high).
std::vector<uint8_t> pack_k4_scales(const int sc[8], const int m[8]) {
  std::vector<uint8_t> s(12);
  for (int i = 0; i < 4; ++i) {
    s[i] = static_cast<uint8_t>(sc[i] | (sc[i + 4] >> 4) << 6);
    s[i + 4] = static_cast<uint8_t>(m[i] | (m[i + 4] >> 4) << 6);
    s[i + 8] = static_cast<uint8_t>((sc[i + 4] & 0xf) | (m[i + 4] & 0xf) << 4);
  }
  return s;
}

TEST(DequantTest, Q4_K) {
  const int sc[8] = {1, 2, 63, 10, 33, 17, 48, 5};
  const int m[8] = {0, 3, 7, 63, 20, 50, 1, 32};
  std::vector<uint8_t> b(144);
  put_f16(b, 0, 0.5f);   // d
  put_f16(b, 2, 0.25f);  // dmin
  const std::vector<uint8_t> scales = pack_k4_scales(sc, m);
  std::copy(scales.begin(), scales.end(), b.begin() + 4);
  // Chunk c, byte l: low nibble (l + c) % 16, high nibble (3 * l + c) % 16.
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      b[16 + 32 * c + l] = static_cast<uint8_t>((l + c) % 16 | ((3 * l + c) % 16) << 4);
    }
  }
  const std::vector<float> y = decode(GgmlType::kQ4_K, b, 256);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      const int s0 = 2 * c, s1 = 2 * c + 1;
      EXPECT_EQ(y[64 * c + l], 0.5f * sc[s0] * ((l + c) % 16) - 0.25f * m[s0]) << c << "," << l;
      EXPECT_EQ(y[64 * c + 32 + l], 0.5f * sc[s1] * ((3 * l + c) % 16) - 0.25f * m[s1])
          << c << "," << l;
    }
  }
}

TEST(DequantTest, Q5_K) {
  const int sc[8] = {4, 8, 15, 16, 23, 42, 1, 63};
  const int m[8] = {63, 0, 1, 2, 3, 4, 5, 6};
  std::vector<uint8_t> b(176);
  put_f16(b, 0, 0.25f);
  put_f16(b, 2, 0.5f);
  const std::vector<uint8_t> scales = pack_k4_scales(sc, m);
  std::copy(scales.begin(), scales.end(), b.begin() + 4);
  // Fifth bits: qh[l] bit 2c (low half of chunk c) set when l is even; bit 2c + 1 when l % 3 == 0.
  for (int l = 0; l < 32; ++l) {
    uint8_t h = 0;
    for (int c = 0; c < 4; ++c) {
      if (l % 2 == 0) h |= static_cast<uint8_t>(1 << (2 * c));
      if (l % 3 == 0) h |= static_cast<uint8_t>(1 << (2 * c + 1));
    }
    b[16 + l] = h;
  }
  for (int i = 0; i < 128; ++i) b[48 + i] = static_cast<uint8_t>(i % 16 | ((i / 8) % 16) << 4);
  const std::vector<float> y = decode(GgmlType::kQ5_K, b, 256);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      const int i = 32 * c + l;
      const int lo = i % 16 + (l % 2 == 0 ? 16 : 0);
      const int hi = (i / 8) % 16 + (l % 3 == 0 ? 16 : 0);
      EXPECT_EQ(y[64 * c + l], 0.25f * sc[2 * c] * lo - 0.5f * m[2 * c]) << c << "," << l;
      EXPECT_EQ(y[64 * c + 32 + l], 0.25f * sc[2 * c + 1] * hi - 0.5f * m[2 * c + 1])
          << c << "," << l;
    }
  }
}

TEST(DequantTest, Q6_K) {
  std::vector<uint8_t> b(210);
  for (int i = 0; i < 128; ++i) b[i] = 0x21;       // low nibble 1, high nibble 2
  for (int i = 0; i < 64; ++i) b[128 + i] = 0xe4;  // 2-bit fields 0, 1, 2, 3
  for (int i = 0; i < 16; ++i) b[192 + i] = static_cast<uint8_t>(static_cast<int8_t>(i - 5));
  put_f16(b, 208, 0.5f);
  const std::vector<float> y = decode(GgmlType::kQ6_K, b, 256);
  // Quant of the k-th 32-element group of a half: nibble (1 for k < 2, else 2) | field k << 4.
  const int q[4] = {1 - 32, (1 | 16) - 32, (2 | 32) - 32, (2 | 48) - 32};
  for (int h = 0; h < 2; ++h) {
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < 32; ++l) {
        const int scale = 8 * h + l / 16 + 2 * k - 5;
        EXPECT_EQ(y[128 * h + 32 * k + l], 0.5f * scale * q[k]) << h << "," << k << "," << l;
      }
    }
  }
}

TEST(DequantTest, Q2_K) {
  std::vector<uint8_t> b(84);
  for (int i = 0; i < 16; ++i) b[i] = static_cast<uint8_t>((i % 16) | ((15 - i) << 4));
  for (int i = 0; i < 64; ++i) b[16 + i] = 0xe4;  // 2-bit fields 0, 1, 2, 3 (one per shift)
  put_f16(b, 80, 1.0f);
  put_f16(b, 82, 0.5f);
  const std::vector<float> y = decode(GgmlType::kQ2_K, b, 256);
  // Element 128h + 32j + 16g + l: quant j (the field at shift 2j), scale/min byte 8h + 2j + g.
  for (int h = 0; h < 2; ++h) {
    for (int j = 0; j < 4; ++j) {
      for (int g = 0; g < 2; ++g) {
        const int s = 8 * h + 2 * j + g;
        const float expected = 1.0f * (s % 16) * j - 0.5f * (15 - s);
        for (int l = 0; l < 16; ++l) EXPECT_EQ(y[128 * h + 32 * j + 16 * g + l], expected);
      }
    }
  }
}

TEST(DequantTest, Q3_K) {
  std::vector<uint8_t> b(110);
  // High bits: hmask[i] bit n set for every n when i < 16 (group g = 0), none for g = 1.
  for (int i = 0; i < 16; ++i) b[i] = 0xff;
  for (int i = 0; i < 64; ++i) b[32 + i] = 0xe4;  // low 2 bits: j at shift 2j
  // 6-bit scales 0..15 set to 32 + s - 8 (so scale - 32 = s - 8): low nibbles in bytes 0..7,
  // top 2 bits in bytes 8..11.
  uint8_t* scales = b.data() + 96;
  for (int s = 0; s < 16; ++s) {
    const int v = 32 + s - 8;
    if (s < 8) {
      scales[s] = static_cast<uint8_t>((scales[s] & 0xf0) | (v & 0xf));
    } else {
      scales[s - 8] = static_cast<uint8_t>((scales[s - 8] & 0x0f) | (v & 0xf) << 4);
    }
    scales[8 + s % 4] = static_cast<uint8_t>(scales[8 + s % 4] | (v >> 4) << (2 * (s / 4)));
  }
  put_f16(b, 108, 0.5f);
  const std::vector<float> y = decode(GgmlType::kQ3_K, b, 256);
  for (int h = 0; h < 2; ++h) {
    for (int j = 0; j < 4; ++j) {
      for (int g = 0; g < 2; ++g) {
        const int s = 8 * h + 2 * j + g;
        const int q = j - (g == 0 ? 0 : 4);
        for (int l = 0; l < 16; ++l) {
          EXPECT_EQ(y[128 * h + 32 * j + 16 * g + l], 0.5f * (s - 8) * q) << h << j << g << l;
        }
      }
    }
  }
}

// ---- against llama.cpp's reference decoder ----

// Blocks filled with byte i = (37 i + 11 type + i^2 mod 251) mod 256 and fixed f16 scale
// fields; expected values computed by gguf-py 0.19.0's numpy dequantize (gguf.quants).
struct Golden {
  GgmlType type;
  std::vector<std::pair<size_t, float>> scale_fields;  // per block: byte offset, f16 value
  double sum;
  std::vector<std::pair<int, float>> values;
};

std::vector<uint8_t> golden_block_bytes(const Golden& g, int64_t* numel) {
  const GgmlTypeTraits t = *ggml_type_traits(static_cast<uint32_t>(g.type));
  const int blocks = t.block_size == 32 ? 2 : 1;
  *numel = blocks * t.block_size;
  const size_t n = static_cast<size_t>(blocks * t.type_size);
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) {
    b[i] =
        static_cast<uint8_t>((i * 37 + 11 * static_cast<uint32_t>(g.type) + (i * i) % 251) % 256);
  }
  for (int k = 0; k < blocks; ++k) {
    for (const auto& [offset, value] : g.scale_fields) put_f16(b, k * t.type_size + offset, value);
  }
  return b;
}

TEST(DequantTest, MatchesReferenceDecoder) {
  const float d = 0.03125f, dm = 0.015625f;
  const std::vector<Golden> goldens = {
      {GgmlType::kQ4_0,
       {{0, d}},
       -0.875,
       {{0, -0.125f},
        {1, 0.1875f},
        {15, -0.21875f},
        {16, -0.0625f},
        {17, 0.0f},
        {31, 0.09375f},
        {33, 0.15625f},
        {63, -0.25f}}},
      {GgmlType::kQ4_1,
       {{0, d}, {2, -0.5f}},
       -15.65625,
       {{0, -0.34375f},
        {1, -0.40625f},
        {15, -0.0625f},
        {16, -0.125f},
        {17, -0.03125f},
        {31, -0.375f},
        {33, -0.21875f},
        {63, -0.09375f}}},
      {GgmlType::kQ5_0,
       {{0, d}},
       -2.46875,
       {{0, -0.375f},
        {1, -0.3125f},
        {15, 0.28125f},
        {16, -0.375f},
        {17, 0.21875f},
        {31, -0.5f},
        {33, -0.15625f},
        {63, -0.09375f}}},
      {GgmlType::kQ5_1,
       {{0, d}, {2, -0.5f}},
       0.125,
       {{0, 0.15625f},
        {1, -0.15625f},
        {15, -0.15625f},
        {16, 0.34375f},
        {17, 0.4375f},
        {31, 0.34375f},
        {33, -0.28125f},
        {63, 0.4375f}}},
      {GgmlType::kQ8_0,
       {{0, d}},
       -4.1875,
       {{0, -2.8125f},
        {1, -1.5f},
        {15, -0.40625f},
        {16, 1.84375f},
        {17, -3.84375f},
        {31, 3.5625f},
        {33, 1.09375f},
        {63, -0.84375f}}},
      {GgmlType::kQ2_K,
       {{80, d}, {82, dm}},
       53.4375,
       {{0, 1.21875f},
        {1, 0.34375f},
        {15, 0.34375f},
        {16, 0.109375f},
        {17, -0.140625f},
        {31, 0.109375f},
        {33, 0.578125f},
        {63, -0.21875f},
        {100, -0.109375f},
        {128, 0.359375f},
        {200, -0.171875f},
        {255, 0.515625f}}},
      {GgmlType::kQ3_K,
       {{108, d}},
       -16.75,
       {{0, -0.59375f},
        {1, -1.78125f},
        {15, -0.59375f},
        {16, -0.5f},
        {17, -1.0f},
        {31, -1.0f},
        {33, 0.0f},
        {63, -0.5f},
        {100, 0.75f},
        {128, -0.5f},
        {200, 0.0f},
        {255, 0.0f}}},
      {GgmlType::kQ4_K,
       {{0, d}, {2, dm}},
       1503.5,
       {{0, 10.5625f},
        {1, 18.0625f},
        {15, 18.0625f},
        {16, 9.3125f},
        {17, 16.8125f},
        {31, 9.3125f},
        {33, 0.15625f},
        {63, 0.15625f},
        {100, 20.6875f},
        {128, -0.953125f},
        {200, 12.625f},
        {255, 9.359375f}}},
      {GgmlType::kQ5_K,
       {{0, d}, {2, dm}},
       3606.84375,
       {{0, 18.265625f},
        {1, 2.328125f},
        {15, 8.703125f},
        {16, 48.546875f},
        {17, 32.609375f},
        {31, 29.421875f},
        {33, 18.890625f},
        {63, 29.203125f},
        {100, 2.140625f},
        {128, 0.421875f},
        {200, 24.015625f},
        {255, 23.328125f}}},
      {GgmlType::kQ6_K,
       {{208, d}},
       747.125,
       {{0, 42.25f},
        {1, 0.0f},
        {15, 35.75f},
        {16, 14.875f},
        {17, -18.375f},
        {31, -4.375f},
        {33, -13.875f},
        {63, 2.15625f},
        {100, -55.25f},
        {128, -28.4375f},
        {200, 6.1875f},
        {255, 5.25f}}},
  };
  for (const Golden& g : goldens) {
    SCOPED_TRACE(ggml_type_name(g.type));
    int64_t numel = 0;
    const std::vector<uint8_t> bytes = golden_block_bytes(g, &numel);
    const std::vector<float> y = decode(g.type, bytes, numel);
    double sum = 0;
    for (float v : y) sum += v;
    EXPECT_EQ(sum, g.sum);
    for (const auto& [index, value] : g.values) EXPECT_EQ(y[index], value) << "element " << index;
  }
}

// ---- the stored formats the loader converts on the device ----

// Every type stored_format() maps is the StoredFormat of the same name and block size, each
// StoredFormat has one type, and convert_stored on the host decodes a type's random blocks
// (finite f16 scales) exactly as dequantize() does, rounding to bf16 / f16 to nearest even.
TEST(DequantTest, StoredFormatsAreTheirGgmlTypes) {
  std::mt19937 rng(5);
  std::set<kernels::StoredFormat> seen;
  for (uint32_t id = 0; id < 64; ++id) {
    const std::optional<GgmlTypeTraits> traits = ggml_type_traits(id);
    const auto type = static_cast<GgmlType>(id);
    const std::optional<kernels::StoredFormat> format = stored_format(type);
    if (!traits || !format) continue;
    SCOPED_TRACE(std::string(traits->name));
    EXPECT_TRUE(seen.insert(*format).second);
    std::string name(traits->name);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    EXPECT_EQ(kernels::stored_format_name(*format), name);
    EXPECT_EQ(kernels::stored_block_elems(*format), traits->block_size);
    EXPECT_EQ(kernels::stored_block_bytes(*format), traits->type_size);

    const int64_t n = 8 * traits->block_size;
    const std::vector<uint8_t> bytes = kernels::test::random_stored(*format, n, rng);
    std::vector<float> expect(static_cast<size_t>(n)), got(expect.size());
    ASSERT_TRUE(dequantize(type, bytes.data(), bytes.size(), n, expect.data()).ok());
    kernels::convert_stored(bytes.data(), *format, Tensor(got.data(), DType::kF32, {n}),
                            backend::Stream::cpu());
    EXPECT_EQ(std::memcmp(got.data(), expect.data(), got.size() * sizeof(float)), 0);
    std::vector<uint16_t> bf16(expect.size()), f16(expect.size());
    kernels::convert_stored(bytes.data(), *format, Tensor(bf16.data(), DType::kBF16, {n}),
                            backend::Stream::cpu());
    kernels::convert_stored(bytes.data(), *format, Tensor(f16.data(), DType::kF16, {n}),
                            backend::Stream::cpu());
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(bf16[i], float_to_bf16(expect[i])) << i;
      ASSERT_EQ(f16[i], float_to_f16(expect[i])) << i;
    }
  }
  EXPECT_EQ(seen.size(), kernels::kStoredFormats.size());
  EXPECT_FALSE(stored_format(GgmlType::kF64).has_value());  // dequantize() converts it itself
  EXPECT_TRUE(can_dequantize(GgmlType::kF64));
}

// ---- errors ----

TEST(DequantTest, Errors) {
  std::vector<float> out(256);
  std::vector<uint8_t> bytes(1024);
  for (GgmlType t : {GgmlType::kIQ2_XXS, GgmlType::kQ8_1, GgmlType::kI32, GgmlType::kQ8_K}) {
    EXPECT_FALSE(can_dequantize(t));
    expect_status(dequantize(t, bytes.data(), 0, 0, out.data()), StatusCode::kUnimplemented,
                  {"cannot dequantize", ggml_type_name(t)});
  }
  expect_status(dequantize(GgmlType::kQ4_0, bytes.data(), 18, 31, out.data()),
                StatusCode::kInvalidArgument, {"31 elements of Q4_0", "32-element blocks"});
  expect_status(dequantize(GgmlType::kQ4_0, bytes.data(), 17, 32, out.data()),
                StatusCode::kInvalidArgument, {"take 18 bytes, got 17"});
  expect_status(dequantize(GgmlType::kF32, bytes.data(), 8, 3, out.data()),
                StatusCode::kInvalidArgument, {"take 12 bytes, got 8"});
  for (GgmlType t :
       {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ4_0, GgmlType::kQ4_1,
        GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ8_0, GgmlType::kQ2_K, GgmlType::kQ3_K,
        GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K}) {
    EXPECT_TRUE(can_dequantize(t)) << ggml_type_name(t);
    EXPECT_TRUE(dequantize(t, bytes.data(), 0, 0, out.data()).ok());  // empty tensors are fine
  }
}

}  // namespace
}  // namespace sgl::model
