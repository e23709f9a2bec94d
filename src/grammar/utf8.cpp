// UTF-8 helpers: encoding, decoding, and code point ranges as sequences of byte ranges.
#include "grammar/utf8.h"

namespace sgl::grammar {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int32_t decode_utf8(std::string_view text, size_t& pos) {
  if (pos >= text.size()) return -1;
  const auto b0 = static_cast<uint8_t>(text[pos]);
  int len = 0;
  uint32_t cp = 0;
  if (b0 < 0x80) {
    ++pos;
    return b0;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    return -1;
  }
  if (pos + len > text.size()) return -1;
  for (int i = 1; i < len; ++i) {
    const auto b = static_cast<uint8_t>(text[pos + i]);
    if ((b & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinForLength[len] || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
  pos += len;
  return static_cast<int32_t>(cp);
}

namespace {

int utf8_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// Splits [lo, hi] (same encoded length, no surrogates) until each piece is a cross product of
// per-byte ranges, then emits it.
void split_range(uint32_t lo, uint32_t hi, std::vector<std::vector<ByteRange>>& out) {
  const int n = utf8_length(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t mask = (1u << (6 * i)) - 1;
    if ((lo & ~mask) != (hi & ~mask)) {
      if ((lo & mask) != 0) {
        split_range(lo, lo | mask, out);
        split_range((lo | mask) + 1, hi, out);
        return;
      }
      if ((hi & mask) != mask) {
        split_range(lo, (hi & ~mask) - 1, out);
        split_range(hi & ~mask, hi, out);
        return;
      }
    }
  }
  std::string a, b;
  append_utf8(a, lo);
  append_utf8(b, hi);
  std::vector<ByteRange> seq(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    seq[i] = {static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i])};
  }
  out.push_back(std::move(seq));
}

}  // namespace

std::vector<std::vector<ByteRange>> utf8_sequences(const std::vector<CodePointRange>& ranges) {
  static constexpr uint32_t kBoundaries[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};
  std::vector<std::vector<ByteRange>> out;
  for (CodePointRange r : ranges) {
    if (r.hi > kMaxCodePoint) r.hi = kMaxCodePoint;
    // Cut out the surrogates, then split at the encoded-length boundaries.
    std::vector<CodePointRange> parts;
    if (r.lo < 0xD800 && r.hi > 0xDFFF) {
      parts = {{r.lo, 0xD7FF}, {0xE000, r.hi}};
    } else if (r.lo >= 0xD800 && r.hi <= 0xDFFF) {
      continue;
    } else if (r.lo >= 0xD800 && r.lo <= 0xDFFF) {
      parts = {{0xE000, r.hi}};
    } else if (r.hi >= 0xD800 && r.hi <= 0xDFFF) {
      parts = {{r.lo, 0xD7FF}};
    } else {
      parts = {r};
    }
    for (CodePointRange p : parts) {
      if (p.lo > p.hi) continue;
      uint32_t lo = p.lo;
      for (uint32_t boundary : kBoundaries) {
        if (lo > p.hi) break;
        if (lo > boundary) continue;
        const uint32_t hi = p.hi < boundary ? p.hi : boundary;
        split_range(lo, hi, out);
        lo = hi + 1;
      }
    }
  }
  return out;
}

uint8_t utf8_next_state(uint8_t state, uint8_t b) {
  const bool cont = b >= 0x80 && b <= 0xBF;
  switch (state) {
    case 0:
      if (b < 0x80) return 0;
      if (b >= 0xC2 && b <= 0xDF) return 1;
      if (b == 0xE0) return 4;
      if (b == 0xED) return 5;
      if (b >= 0xE1 && b <= 0xEF) return 2;
      if (b == 0xF0) return 6;
      if (b >= 0xF1 && b <= 0xF3) return 3;
      if (b == 0xF4) return 7;
      return kUtf8Invalid;
    case 1:
      return cont ? 0 : kUtf8Invalid;
    case 2:
      return cont ? 1 : kUtf8Invalid;
    case 3:
      return cont ? 2 : kUtf8Invalid;
    case 4:  // after E0: no overlong forms
      return b >= 0xA0 && b <= 0xBF ? 1 : kUtf8Invalid;
    case 5:  // after ED: no surrogates
      return b >= 0x80 && b <= 0x9F ? 1 : kUtf8Invalid;
    case 6:  // after F0: no overlong forms
      return b >= 0x90 && b <= 0xBF ? 2 : kUtf8Invalid;
    case 7:  // after F4: nothing past U+10FFFF
      return b >= 0x80 && b <= 0x8F ? 2 : kUtf8Invalid;
    default:
      return kUtf8Invalid;
  }
}

}  // namespace sgl::grammar
