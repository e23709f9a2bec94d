// Stored formats' block sizes and per-value decoders: value j of one stored block, as the CUDA
// conversion computes it (a value per thread). The host converts whole blocks with
// kernels/cpu/gguf_blocks.cpp; a CPU test compiles these decoders for the host and holds them to
// the block decoders' bits, so weights loaded on the CPU and on a GPU agree. Layouts are ggml's
// (little-endian, packed, no padding).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/host_device.h"
#include "kernels/convert_stored.h"

namespace sgl::kernels::stored_values {

// Values per block: 1 for plain floats, 32 for ggml's small blocks, 256 for k-quant
// super-blocks.
SGL_HOST_DEVICE constexpr int block_elems(StoredFormat f) {
  switch (f) {
    case StoredFormat::kF32:
    case StoredFormat::kF16:
    case StoredFormat::kBF16:
      return 1;
    case StoredFormat::kQ4_0:
    case StoredFormat::kQ4_1:
    case StoredFormat::kQ5_0:
    case StoredFormat::kQ5_1:
    case StoredFormat::kQ8_0:
      return 32;
    case StoredFormat::kQ2_K:
    case StoredFormat::kQ3_K:
    case StoredFormat::kQ4_K:
    case StoredFormat::kQ5_K:
    case StoredFormat::kQ6_K:
      return 256;
  }
  return 0;
}

// Bytes per block (ggml's block structs).
SGL_HOST_DEVICE constexpr int block_bytes(StoredFormat f) {
  switch (f) {
    case StoredFormat::kF32:
      return 4;
    case StoredFormat::kF16:
    case StoredFormat::kBF16:
      return 2;
    case StoredFormat::kQ4_0:
      return 2 + 16;
    case StoredFormat::kQ4_1:
      return 2 + 2 + 16;
    case StoredFormat::kQ5_0:
      return 2 + 4 + 16;
    case StoredFormat::kQ5_1:
      return 2 + 2 + 4 + 16;
    case StoredFormat::kQ8_0:
      return 2 + 32;
    case StoredFormat::kQ2_K:
      return 16 + 64 + 2 + 2;
    case StoredFormat::kQ3_K:
      return 32 + 64 + 12 + 2;
    case StoredFormat::kQ4_K:
      return 2 + 2 + 12 + 128;
    case StoredFormat::kQ5_K:
      return 2 + 2 + 12 + 32 + 128;
    case StoredFormat::kQ6_K:
      return 128 + 64 + 16 + 2;
  }
  return 0;
}

// ---- arithmetic and loads, the same on both sides ----

// NOTE: every product and sum rounds on its own, as in the host block decoders. nvcc fuses
// a * b - c into one fma unless told not to, so the device uses the _rn intrinsics; host code
// (the block decoders, the test of these) is built with -ffp-contract=off, where a target with
// fma would let the compiler fuse too.
SGL_HOST_DEVICE inline float mul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
SGL_HOST_DEVICE inline float add(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
SGL_HOST_DEVICE inline float sub(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

// Little-endian loads from bytes of any alignment.
SGL_HOST_DEVICE inline uint32_t u16_at(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8;
}
SGL_HOST_DEVICE inline uint32_t u32_at(const uint8_t* p) { return u16_at(p) | u16_at(p + 2) << 16; }

SGL_HOST_DEVICE inline float float_from_bits(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// The IEEE f16 at p as f32 (exact).
SGL_HOST_DEVICE inline float f16_at(const uint8_t* p) {
  const uint32_t h = u16_at(p);
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in f32
    const float v = static_cast<float>(mant) * 0x1p-24f;
    return sign != 0 ? -v : v;
  }
  if (exp == 31) return float_from_bits(sign | 0x7f800000u | mant << 13);  // inf, NaN
  return float_from_bits(sign | (exp + 112) << 23 | mant << 13);
}

// ---- 32-value blocks ----
// Byte j of the packed nibbles holds value j in its low nibble and value j + 16 in its high one.

SGL_HOST_DEVICE inline int nibble32(const uint8_t* qs, int j) {
  return j < 16 ? qs[j] & 0xf : qs[j - 16] >> 4;
}

// Q4_0: f16 d | 16 bytes of 4-bit quants. x = (q - 8) * d.
SGL_HOST_DEVICE inline float q4_0(const uint8_t* b, int j) {
  return mul(static_cast<float>(nibble32(b + 2, j) - 8), f16_at(b));
}

// Q4_1: f16 d | f16 m | 16 bytes of 4-bit quants. x = q * d + m.
SGL_HOST_DEVICE inline float q4_1(const uint8_t* b, int j) {
  return add(mul(static_cast<float>(nibble32(b + 4, j)), f16_at(b)), f16_at(b + 2));
}

// Q5_0: f16 d | u32 fifth bits (bit j for value j) | 16 bytes of low nibbles. x = (q - 16) * d.
SGL_HOST_DEVICE inline float q5_0(const uint8_t* b, int j) {
  const int q = nibble32(b + 6, j) | static_cast<int>((u32_at(b + 2) >> j) & 1) << 4;
  return mul(static_cast<float>(q - 16), f16_at(b));
}

// Q5_1: f16 d | f16 m | u32 fifth bits | 16 bytes of low nibbles. x = q * d + m.
SGL_HOST_DEVICE inline float q5_1(const uint8_t* b, int j) {
  const int q = nibble32(b + 8, j) | static_cast<int>((u32_at(b + 4) >> j) & 1) << 4;
  return add(mul(static_cast<float>(q), f16_at(b)), f16_at(b + 2));
}

// Q8_0: f16 d | 32 int8 quants. x = q * d.
SGL_HOST_DEVICE inline float q8_0(const uint8_t* b, int j) {
  return mul(static_cast<float>(static_cast<int8_t>(b[2 + j])), f16_at(b));
}

// ---- 256-value super-blocks (k-quants) ----

// Q2_K: 16 bytes of (4-bit scale | 4-bit min << 4) | 64 bytes of 2-bit quants | f16 d |
// f16 dmin. Value e = 128h + 32j + r (r < 32) is bits 2j..2j+1 of quant byte 32h + r, with
// scale/min byte e / 16. x = d * scale * q - dmin * min.
SGL_HOST_DEVICE inline float q2_k(const uint8_t* b, int e) {
  const uint32_t s = b[e >> 4];
  const float dl = mul(f16_at(b + 80), static_cast<float>(s & 0xf));
  const float ml = mul(f16_at(b + 82), static_cast<float>(s >> 4));
  const int q = (b[16 + 32 * (e >> 7) + (e & 31)] >> (2 * ((e >> 5) & 3))) & 3;
  return sub(mul(dl, static_cast<float>(q)), ml);
}

// 6-bit scale `i` (0..15) of a Q3_K block's 12 scale bytes: the low 4 bits are nibbles of bytes
// 0..7 (low nibbles for scales 0..7, high for 8..15); the top 2 bits are 2-bit fields of bytes
// 8..11 (byte 8 + i % 4, field i / 4). Stored biased by 32.
SGL_HOST_DEVICE inline int q3_k_scale(const uint8_t* s, int i) {
  const int low = i < 8 ? (s[i] & 0xf) : (s[i - 8] >> 4);
  const int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
  return (low | high << 4) - 32;
}

// Q3_K: 32 bytes of third bits | 64 bytes of 2-bit low quants | 12 bytes of scales | f16 d.
// Value e = 128h + 32j + r as in Q2_K (scale e / 16); bit 4h + j of third-bit byte r set means
// the quant stands, clear means subtract 4. x = d * scale * q.
SGL_HOST_DEVICE inline float q3_k(const uint8_t* b, int e) {
  const int h = e >> 7, j = (e >> 5) & 3, r = e & 31;
  const int low = (b[32 + 32 * h + r] >> (2 * j)) & 3;
  const int q = low - ((b[r] >> (4 * h + j)) & 1 ? 0 : 4);
  const float dl = mul(f16_at(b + 108), static_cast<float>(q3_k_scale(b + 96, e >> 4)));
  return mul(dl, static_cast<float>(q));
}

// Scale and min `i` (0..7) of a Q4_K / Q5_K block, 6 bits each in 12 bytes: for i < 4 the low
// 6 bits of bytes i and i + 4; for i >= 4 a nibble of byte i + 4 plus the top 2 bits of bytes
// i - 4 (scale) and i (min).
SGL_HOST_DEVICE inline void k4_scale_min(const uint8_t* s, int i, int* scale, int* min) {
  if (i < 4) {
    *scale = s[i] & 63;
    *min = s[i + 4] & 63;
  } else {
    *scale = (s[i + 4] & 0xf) | (s[i - 4] >> 6) << 4;
    *min = (s[i + 4] >> 4) | (s[i] >> 6) << 4;
  }
}

// x = d * scale * q - dmin * min for value e of a Q4_K / Q5_K block with quant q.
SGL_HOST_DEVICE inline float k4_value(const uint8_t* b, int e, int q) {
  int scale, min;
  k4_scale_min(b + 4, e >> 5, &scale, &min);
  const float dl = mul(f16_at(b), static_cast<float>(scale));
  const float ml = mul(f16_at(b + 2), static_cast<float>(min));
  return sub(mul(dl, static_cast<float>(q)), ml);
}

// Q4_K: f16 d | f16 dmin | 12 bytes of scales/mins | 128 bytes of 4-bit quants. Value
// e = 64c + 32k + r is nibble k (low, high) of quant byte 32c + r, with scale/min e / 32.
SGL_HOST_DEVICE inline float q4_k(const uint8_t* b, int e) {
  const int byte = b[16 + 32 * (e >> 6) + (e & 31)];
  return k4_value(b, e, (e >> 5) & 1 ? byte >> 4 : byte & 0xf);
}

// Q5_K: as Q4_K with 32 bytes of fifth bits after the scales: bit e / 32 of byte e % 32 adds 16.
SGL_HOST_DEVICE inline float q5_k(const uint8_t* b, int e) {
  const int byte = b[48 + 32 * (e >> 6) + (e & 31)];
  const int high = (b[16 + (e & 31)] >> (e >> 5)) & 1;
  return k4_value(b, e, ((e >> 5) & 1 ? byte >> 4 : byte & 0xf) | high << 4);
}

// Q6_K: 128 bytes of low nibbles | 64 bytes of 2-bit highs | 16 int8 scales | f16 d. Value
// e = 128h + 32k + r takes nibble k / 2 of low byte 64h + 32 (k % 2) + r, bits 2k..2k+1 of high
// byte 128 + 32h + r, and scale 8h + 2k + r / 16. x = d * scale * (q - 32).
SGL_HOST_DEVICE inline float q6_k(const uint8_t* b, int e) {
  const int h = e >> 7, k = (e >> 5) & 3, r = e & 31;
  const int low_byte = b[64 * h + 32 * (k & 1) + r];
  const int low = k < 2 ? low_byte & 0xf : low_byte >> 4;
  const int q = (low | ((b[128 + 32 * h + r] >> (2 * k)) & 3) << 4) - 32;
  const auto scale = static_cast<int8_t>(b[192 + 8 * h + 2 * k + r / 16]);
  return mul(mul(f16_at(b + 208), static_cast<float>(scale)), static_cast<float>(q));
}

// Value j of the block at `b` in format F.
template <StoredFormat F>
SGL_HOST_DEVICE inline float block_value(const uint8_t* b, int j) {
  if constexpr (F == StoredFormat::kF32) {
    return float_from_bits(u32_at(b));
  } else if constexpr (F == StoredFormat::kF16) {
    return f16_at(b);
  } else if constexpr (F == StoredFormat::kBF16) {
    return float_from_bits(u16_at(b) << 16);
  } else if constexpr (F == StoredFormat::kQ4_0) {
    return q4_0(b, j);
  } else if constexpr (F == StoredFormat::kQ4_1) {
    return q4_1(b, j);
  } else if constexpr (F == StoredFormat::kQ5_0) {
    return q5_0(b, j);
  } else if constexpr (F == StoredFormat::kQ5_1) {
    return q5_1(b, j);
  } else if constexpr (F == StoredFormat::kQ8_0) {
    return q8_0(b, j);
  } else if constexpr (F == StoredFormat::kQ2_K) {
    return q2_k(b, j);
  } else if constexpr (F == StoredFormat::kQ3_K) {
    return q3_k(b, j);
  } else if constexpr (F == StoredFormat::kQ4_K) {
    return q4_k(b, j);
  } else if constexpr (F == StoredFormat::kQ5_K) {
    return q5_k(b, j);
  } else {
    static_assert(F == StoredFormat::kQ6_K);
    return q6_k(b, j);
  }
}

// Value i of the values stored at `src` in format F.
template <StoredFormat F>
SGL_HOST_DEVICE inline float stored_value(const uint8_t* src, int64_t i) {
  constexpr int kElems = block_elems(F), kBytes = block_bytes(F);
  return block_value<F>(src + i / kElems * kBytes, static_cast<int>(i % kElems));
}

template <StoredFormat F>
using FormatTag = std::integral_constant<StoredFormat, F>;

// fn(FormatTag<format>{}): turns a runtime format into a template argument (host code).
template <typename Fn>
decltype(auto) visit_format(StoredFormat format, Fn&& fn) {
  switch (format) {
    case StoredFormat::kF32:
      return fn(FormatTag<StoredFormat::kF32>{});
    case StoredFormat::kF16:
      return fn(FormatTag<StoredFormat::kF16>{});
    case StoredFormat::kBF16:
      return fn(FormatTag<StoredFormat::kBF16>{});
    case StoredFormat::kQ4_0:
      return fn(FormatTag<StoredFormat::kQ4_0>{});
    case StoredFormat::kQ4_1:
      return fn(FormatTag<StoredFormat::kQ4_1>{});
    case StoredFormat::kQ5_0:
      return fn(FormatTag<StoredFormat::kQ5_0>{});
    case StoredFormat::kQ5_1:
      return fn(FormatTag<StoredFormat::kQ5_1>{});
    case StoredFormat::kQ8_0:
      return fn(FormatTag<StoredFormat::kQ8_0>{});
    case StoredFormat::kQ2_K:
      return fn(FormatTag<StoredFormat::kQ2_K>{});
    case StoredFormat::kQ3_K:
      return fn(FormatTag<StoredFormat::kQ3_K>{});
    case StoredFormat::kQ4_K:
      return fn(FormatTag<StoredFormat::kQ4_K>{});
    case StoredFormat::kQ5_K:
      return fn(FormatTag<StoredFormat::kQ5_K>{});
    case StoredFormat::kQ6_K:
      return fn(FormatTag<StoredFormat::kQ6_K>{});
  }
  __builtin_unreachable();  // every enumerator is handled above
}

}  // namespace sgl::kernels::stored_values
