// Host block decoders, one per ggml block layout, written from the formats' description. The
// CUDA kernels decode with kernels/stored_values.h instead (a value per thread); tests hold the
// two to the same bits.
#include "kernels/cpu/gguf_blocks.h"

#include <cstring>

#include "core/half.h"

namespace sgl::kernels::cpu {
namespace {

float load_f16(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return f16_to_float(bits);
}

// ---- 32-element blocks ----
// In every 32-element block format, byte j of the packed nibbles holds element j in its low
// nibble and element j + 16 in its high nibble.

// Q4_0: f16 d | 16 bytes of 4-bit quants. x = (q - 8) * d.
void q4_0(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 0xf) - 8) * d;
    y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

// Q4_1: f16 d | f16 m | 16 bytes of 4-bit quants. x = q * d + m.
void q4_1(const uint8_t* b, float* y) {
  const float d = load_f16(b), m = load_f16(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(qs[j] & 0xf) * d + m;
    y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

// The fifth bits of a Q5 block: bit j of the little-endian u32 belongs to element j.
uint32_t load_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

// Q5_0: f16 d | u32 high bits | 16 bytes of low nibbles. x = (q - 16) * d.
void q5_0(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const uint32_t qh = load_u32(b + 2);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 0xf) | static_cast<int>((qh >> j) & 1) << 4;
    const int hi = (qs[j] >> 4) | static_cast<int>((qh >> (j + 16)) & 1) << 4;
    y[j] = static_cast<float>(lo - 16) * d;
    y[j + 16] = static_cast<float>(hi - 16) * d;
  }
}

// Q5_1: f16 d | f16 m | u32 high bits | 16 bytes of low nibbles. x = q * d + m.
void q5_1(const uint8_t* b, float* y) {
  const float d = load_f16(b), m = load_f16(b + 2);
  const uint32_t qh = load_u32(b + 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 0xf) | static_cast<int>((qh >> j) & 1) << 4;
    const int hi = (qs[j] >> 4) | static_cast<int>((qh >> (j + 16)) & 1) << 4;
    y[j] = static_cast<float>(lo) * d + m;
    y[j + 16] = static_cast<float>(hi) * d + m;
  }
}

// Q8_0: f16 d | 32 int8 quants. x = q * d.
void q8_0(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

// ---- 256-element super-blocks (k-quants) ----

// Q2_K: 16 bytes of (4-bit scale | 4-bit min << 4) | 64 bytes of 2-bit quants | f16 d | f16 dmin.
// Each 128-element half uses 32 quant bytes four times (shifts 0, 2, 4, 6); within one shift,
// bytes 0..15 and 16..31 are two 16-element sub-blocks with their own scale and min.
void q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = load_f16(b + 80), dmin = load_f16(b + 82);
  for (int h = 0; h < 2; ++h) {
    for (int j = 0; j < 4; ++j) {
      for (int g = 0; g < 2; ++g) {
        const uint8_t s = scales[h * 8 + j * 2 + g];
        const float dl = d * static_cast<float>(s & 0xf);
        const float ml = dmin * static_cast<float>(s >> 4);
        const uint8_t* q = qs + h * 32 + g * 16;
        float* out = y + h * 128 + j * 32 + g * 16;
        for (int l = 0; l < 16; ++l) out[l] = dl * static_cast<float>((q[l] >> (2 * j)) & 3) - ml;
      }
    }
  }
}

// 6-bit scale `i` (0..15) of a Q3_K block's 12 scale bytes: the low 4 bits are nibbles of bytes
// 0..7 (low nibbles for scales 0..7, high for 8..15); the top 2 bits are 2-bit fields of bytes
// 8..11 (byte 8 + i % 4, field i / 4).
int q3_k_scale(const uint8_t* s, int i) {
  const int low = i < 8 ? (s[i] & 0xf) : (s[i - 8] >> 4);
  const int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
  return (low | high << 4) - 32;
}

// Q3_K: 32 bytes of high bits | 64 bytes of 2-bit low quants | 12 bytes of scales | f16 d.
// Same element order as Q2_K; bit (h * 4 + j) of hmask[l] is the third bit, and a clear third
// bit means "subtract 4".
void q3_k(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const uint8_t* scales = b + 96;
  const float d = load_f16(b + 108);
  for (int h = 0; h < 2; ++h) {
    for (int j = 0; j < 4; ++j) {
      const uint8_t bit = static_cast<uint8_t>(1u << (h * 4 + j));
      for (int g = 0; g < 2; ++g) {
        const float dl = d * static_cast<float>(q3_k_scale(scales, h * 8 + j * 2 + g));
        const uint8_t* q = qs + h * 32 + g * 16;
        const uint8_t* hm = hmask + g * 16;
        float* out = y + h * 128 + j * 32 + g * 16;
        for (int l = 0; l < 16; ++l) {
          const int v = ((q[l] >> (2 * j)) & 3) - ((hm[l] & bit) ? 0 : 4);
          out[l] = dl * static_cast<float>(v);
        }
      }
    }
  }
}

// Scale and min `i` (0..7) of a Q4_K / Q5_K block, 6 bits each in 12 bytes: for i < 4 the low
// 6 bits of bytes i and i + 4; for i >= 4 a nibble of byte i + 4 plus the top 2 bits of bytes
// i - 4 (scale) and i (min).
void k4_scale_min(const uint8_t* s, int i, int* scale, int* min) {
  if (i < 4) {
    *scale = s[i] & 63;
    *min = s[i + 4] & 63;
  } else {
    *scale = (s[i + 4] & 0xf) | (s[i - 4] >> 6) << 4;
    *min = (s[i + 4] >> 4) | (s[i] >> 6) << 4;
  }
}

// Q4_K: f16 d | f16 dmin | 12 bytes of scales/mins | 128 bytes of 4-bit quants. Four 64-element
// chunks; chunk c reads quant bytes 32c..32c+31, low nibbles with scale 2c, high with 2c + 1.
void q4_k(const uint8_t* b, float* y) {
  const float d = load_f16(b), dmin = load_f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qs = b + 16;
  for (int c = 0; c < 4; ++c) {
    int sc0, m0, sc1, m1;
    k4_scale_min(scales, 2 * c, &sc0, &m0);
    k4_scale_min(scales, 2 * c + 1, &sc1, &m1);
    const float d0 = d * static_cast<float>(sc0), min0 = dmin * static_cast<float>(m0);
    const float d1 = d * static_cast<float>(sc1), min1 = dmin * static_cast<float>(m1);
    const uint8_t* q = qs + 32 * c;
    for (int l = 0; l < 32; ++l) {
      y[64 * c + l] = d0 * static_cast<float>(q[l] & 0xf) - min0;
      y[64 * c + 32 + l] = d1 * static_cast<float>(q[l] >> 4) - min1;
    }
  }
}

// Q5_K: as Q4_K with 32 bytes of fifth bits after the scales: bit 2c (low nibbles) or 2c + 1
// (high nibbles) of qh[l] adds 16.
void q5_k(const uint8_t* b, float* y) {
  const float d = load_f16(b), dmin = load_f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int c = 0; c < 4; ++c) {
    int sc0, m0, sc1, m1;
    k4_scale_min(scales, 2 * c, &sc0, &m0);
    k4_scale_min(scales, 2 * c + 1, &sc1, &m1);
    const float d0 = d * static_cast<float>(sc0), min0 = dmin * static_cast<float>(m0);
    const float d1 = d * static_cast<float>(sc1), min1 = dmin * static_cast<float>(m1);
    const uint8_t* q = qs + 32 * c;
    for (int l = 0; l < 32; ++l) {
      const int lo = (q[l] & 0xf) + (((qh[l] >> (2 * c)) & 1) << 4);
      const int hi = (q[l] >> 4) + (((qh[l] >> (2 * c + 1)) & 1) << 4);
      y[64 * c + l] = d0 * static_cast<float>(lo) - min0;
      y[64 * c + 32 + l] = d1 * static_cast<float>(hi) - min1;
    }
  }
}

// Q6_K: 128 bytes of low nibbles | 64 bytes of 2-bit highs | 16 int8 scales | f16 d. Each
// 128-element half h uses low bytes 64h..64h+63, high bytes 32h..32h+31 and scales 8h..8h+7;
// element l + 32k (k = 0..3) takes nibble (k / 2) of low byte l + 32 (k % 2), bits 2k..2k+1 of
// high byte l, and scale l / 16 + 2k. x = d * scale * (q - 32).
void q6_k(const uint8_t* b, float* y) {
  const float d = load_f16(b + 208);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b + 64 * h;
    const uint8_t* qh = b + 128 + 32 * h;
    const auto* sc = reinterpret_cast<const int8_t*>(b + 192 + 8 * h);
    for (int l = 0; l < 32; ++l) {
      for (int k = 0; k < 4; ++k) {
        const uint8_t low_byte = ql[l + 32 * (k % 2)];
        const int low = k < 2 ? (low_byte & 0xf) : (low_byte >> 4);
        const int q = (low | ((qh[l] >> (2 * k)) & 3) << 4) - 32;
        y[128 * h + 32 * k + l] =
            d * static_cast<float>(sc[l / 16 + 2 * k]) * static_cast<float>(q);
      }
    }
  }
}

}  // namespace

BlockDecoder block_decoder(StoredFormat format) {
  switch (format) {
    case StoredFormat::kQ4_0:
      return q4_0;
    case StoredFormat::kQ4_1:
      return q4_1;
    case StoredFormat::kQ5_0:
      return q5_0;
    case StoredFormat::kQ5_1:
      return q5_1;
    case StoredFormat::kQ8_0:
      return q8_0;
    case StoredFormat::kQ2_K:
      return q2_k;
    case StoredFormat::kQ3_K:
      return q3_k;
    case StoredFormat::kQ4_K:
      return q4_k;
    case StoredFormat::kQ5_K:
      return q5_k;
    case StoredFormat::kQ6_K:
      return q6_k;
    case StoredFormat::kF32:
    case StoredFormat::kF16:
    case StoredFormat::kBF16:
      break;
  }
  return nullptr;
}

}  // namespace sgl::kernels::cpu
