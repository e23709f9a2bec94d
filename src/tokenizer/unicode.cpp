// Unicode helpers: UTF-8 validation/repair, character classes via utf8proc, normalization forms.
#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>

namespace sgl::tokenizer::unicode {
namespace {

// Length of the valid UTF-8 sequence at s[pos], or 0 when invalid. `*valid_prefix` receives the
// number of bytes forming the maximal valid prefix (at least 1) for lossy replacement.
size_t valid_sequence_length(std::string_view s, size_t pos, size_t* valid_prefix) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  *valid_prefix = 1;
  if (b0 < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 == 0xE0) {
    len = 3, lo = 0xA0;
  } else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) {
    len = 3;
  } else if (b0 == 0xED) {
    len = 3, hi = 0x9F;
  } else if (b0 == 0xF0) {
    len = 4, lo = 0x90;
  } else if (b0 >= 0xF1 && b0 <= 0xF3) {
    len = 4;
  } else if (b0 == 0xF4) {
    len = 4, hi = 0x8F;
  } else {
    return 0;
  }
  for (size_t k = 1; k < len; ++k) {
    if (pos + k >= s.size()) return 0;
    const auto b = static_cast<unsigned char>(s[pos + k]);
    const unsigned char min = k == 1 ? lo : 0x80;
    const unsigned char max = k == 1 ? hi : 0xBF;
    if (b < min || b > max) return 0;
    *valid_prefix = k + 1;
  }
  return len;
}

// Appends `s` (valid UTF-8) transformed by utf8proc_map with `options` to `out`.
void append_utf8proc_map(std::string_view s, int options, std::string& out) {
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()),
      &mapped, static_cast<utf8proc_option_t>(options | UTF8PROC_STABLE));
  if (n < 0) {
    out.append(s);  // only on invalid input, which callers exclude
  } else {
    out.append(reinterpret_cast<const char*>(mapped), static_cast<size_t>(n));
  }
  std::free(mapped);
}

std::string utf8proc_transform(std::string_view s, int options) {
  // utf8proc_map works on 4-byte code points of the decomposed text, so the text goes through it
  // in chunks of about kChunkBytes, each ending before an ASCII character: every normalization
  // form leaves ASCII unchanged, and an ASCII character neither reorders with its neighbours
  // (combining class 0) nor composes with what precedes it (no canonical composition has an
  // ASCII second character), so the chunks normalize independently.
  constexpr size_t kChunkBytes = 64 << 10;
  std::string out;
  size_t begin = 0;
  while (begin < s.size()) {
    size_t end = std::min(begin + kChunkBytes, s.size());
    while (end < s.size() && static_cast<unsigned char>(s[end]) >= 0x80) ++end;
    if (begin == 0 && end < s.size()) out.reserve(s.size());  // chunks: one buffer for them all
    const std::string_view chunk = s.substr(begin, end - begin);
    const bool ascii = std::all_of(chunk.begin(), chunk.end(),
                                   [](char ch) { return static_cast<unsigned char>(ch) < 0x80; });
    if (ascii) {
      out.append(chunk);
    } else {
      append_utf8proc_map(chunk, options, out);
    }
    begin = end;
  }
  return out;
}

utf8proc_category_t category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

}  // namespace

char32_t decode_utf8(std::string_view s, size_t& pos) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  const size_t len = utf8_sequence_length(b0);
  if (len == 1 || pos + len > s.size()) {
    ++pos;
    return b0;
  }
  char32_t cp = b0 & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[pos + k]) & 0x3F);
  pos += len;
  return cp;
}

size_t leading_whitespace_length(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    size_t next = pos;
    if (!is_whitespace(decode_utf8(s, next))) break;
    pos = next;
  }
  return pos;
}

size_t trailing_whitespace_begin(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t begin = end - 1;
    while (begin > 0 && (static_cast<unsigned char>(s[begin]) & 0xC0) == 0x80) --begin;
    size_t pos = begin;
    if (!is_whitespace(decode_utf8(s, pos))) break;
    end = begin;
  }
  return end;
}

bool is_valid_utf8(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    if (static_cast<unsigned char>(s[pos]) < 0x80) {
      ++pos;
      continue;
    }
    size_t prefix = 0;
    const size_t len = valid_sequence_length(s, pos, &prefix);
    if (len == 0) return false;
    pos += len;
  }
  return true;
}

std::string to_valid_utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  size_t pos = 0;
  while (pos < s.size()) {
    size_t prefix = 0;
    const size_t len = valid_sequence_length(s, pos, &prefix);
    if (len == 0) {
      out.append(kReplacementChar);
      pos += prefix;
    } else {
      out.append(s.substr(pos, len));
      pos += len;
    }
  }
  return out;
}

bool is_whitespace(char32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D);
  if (c < 0x85) return false;
  switch (c) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

bool is_numeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

bool is_punctuation(char32_t c) {
  if (c < 0x80) {
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
  }
  const auto cat = category(c);
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

bool is_word_char(char32_t c) {
  if (c < 0x80) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }
  if (c == 0x200C || c == 0x200D) return true;
  const auto cat = category(c);
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_ME) ||
         cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_PC;
}

bool is_combining_mark(char32_t c) {
  if (c < 0x300) return false;
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_MC || cat == UTF8PROC_CATEGORY_ME;
}

std::string to_lowercase(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    const auto b = static_cast<unsigned char>(s[pos]);
    if (b < 0x80) {
      out.push_back(static_cast<char>(b >= 'A' && b <= 'Z' ? b + 32 : b));
      ++pos;
      continue;
    }
    const char32_t c = decode_utf8(s, pos);
    if (c == 0x130) {
      // NOTE: the one unconditional multi-character lowercase mapping (SpecialCasing.txt).
      out.append("i\xCC\x87");
      continue;
    }
    append_utf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
  }
  return out;
}

std::string nfc(std::string_view s) { return utf8proc_transform(s, UTF8PROC_COMPOSE); }
std::string nfd(std::string_view s) { return utf8proc_transform(s, UTF8PROC_DECOMPOSE); }
std::string nfkc(std::string_view s) {
  return utf8proc_transform(s, UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
}
std::string nfkd(std::string_view s) {
  return utf8proc_transform(s, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
}

}  // namespace sgl::tokenizer::unicode
