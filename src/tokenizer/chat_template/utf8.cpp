// UTF-8 decoding/encoding and Python-like character classification.
#include "tokenizer/chat_template/utf8.h"

#include <algorithm>

namespace sgl::tokenizer::jinja {

std::u32string utf8_decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int len = 0;
    char32_t cp = 0;
    if (c < 0x80) {
      len = 1;
      cp = c;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    }
    bool ok = len > 0 && i + len <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (!ok) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}

std::string utf8_encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : s) append_utf8(out, cp);
  return out;
}

bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

bool is_py_space(char32_t cp) {
  switch (cp) {
    case ' ':
    case '\t':
    case '\n':
    case '\v':
    case '\f':
    case '\r':
    case 0x1C:
    case 0x1D:
    case 0x1E:
    case 0x1F:
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
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool is_py_lower(char32_t cp) { return to_upper_cp(cp) != cp || cp == 0xDF; }
bool is_py_upper(char32_t cp) { return to_lower_cp(cp) != cp; }

bool is_py_digit(char32_t cp) { return cp >= '0' && cp <= '9'; }

bool is_py_alpha(char32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  if (cp == 0xAA || cp == 0xB5 || cp == 0xBA) return true;
  if (cp >= 0xC0 && cp <= 0x24F) return cp != 0xD7 && cp != 0xF7;
  if (cp >= 0x370 && cp <= 0x52F) return cp != 0x37E && cp != 0x387;
  // NOTE: other scripts: treat letters of CJK, Hangul, etc. as alphabetic and common
  // punctuation/symbol blocks as not.
  if (cp >= 0x2000 && cp <= 0x2BFF) return false;  // punctuation, symbols, arrows
  if (cp >= 0x3000 && cp <= 0x303F) return false;  // CJK punctuation
  if (cp >= 0xFF00 && cp <= 0xFF0F) return false;  // fullwidth punctuation
  if (cp >= 0xFF1A && cp <= 0xFF20) return false;
  if (cp >= 0xFE30 && cp <= 0xFE4F) return false;
  if (cp >= 0x1F000 && cp <= 0x1FAFF) return false;  // emoji
  if (cp >= 0x80 && cp <= 0xBF) return false;
  return !is_py_space(cp);
}

bool is_py_word(char32_t cp) { return cp == '_' || is_py_digit(cp) || is_py_alpha(cp); }

char32_t to_upper_cp(char32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
  if (cp == 0xB5) return 0x39C;
  if (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) return cp - 32;
  if (cp == 0xFF) return 0x178;
  if (cp >= 0x100 && cp <= 0x17F) {
    if (cp == 0x131) return 'I';
    if (cp == 0x17F) return 'S';
    bool odd_lower = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
    if (cp == 0x138 || cp == 0x149) return cp;
    if (odd_lower) return (cp % 2 == 0) ? cp - 1 : cp;
    return (cp % 2 == 1) ? cp - 1 : cp;
  }
  if (cp >= 0x3B1 && cp <= 0x3CB && cp != 0x3C2) return cp - 32;
  if (cp == 0x3C2) return 0x3A3;
  if (cp >= 0x3AC && cp <= 0x3AC) return 0x386;
  if (cp >= 0x3AD && cp <= 0x3AF) return cp - 37;
  if (cp == 0x3CC) return 0x38C;
  if (cp == 0x3CD || cp == 0x3CE) return cp - 63;
  if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
  if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
  if (cp >= 0x460 && cp <= 0x4FF && cp % 2 == 1 && !(cp >= 0x482 && cp <= 0x489)) return cp - 1;
  return cp;
}

char32_t to_lower_cp(char32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 32;
  if (cp == 0x178) return 0xFF;
  if (cp >= 0x100 && cp <= 0x17F) {
    if (cp == 0x130) return 'i';
    if (cp == 0x138 || cp == 0x149 || cp == 0x17F) return cp;
    bool odd_lower = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
    if (odd_lower) return (cp % 2 == 1) ? cp + 1 : cp;
    return (cp % 2 == 0) ? cp + 1 : cp;
  }
  if (cp >= 0x391 && cp <= 0x3AB && cp != 0x3A2) return cp + 32;
  if (cp == 0x386) return 0x3AC;
  if (cp >= 0x388 && cp <= 0x38A) return cp + 37;
  if (cp == 0x38C) return 0x3CC;
  if (cp == 0x38E || cp == 0x38F) return cp + 63;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
  if (cp >= 0x460 && cp <= 0x4FF && cp % 2 == 0 && !(cp >= 0x482 && cp <= 0x489)) return cp + 1;
  return cp;
}

namespace {

template <typename F>
std::string map_code_points(std::string_view s, F&& f) {
  std::string out;
  out.reserve(s.size());
  if (is_ascii(s)) {
    for (char c : s) out.push_back(static_cast<char>(f(static_cast<char32_t>(c))));
    return out;
  }
  for (char32_t cp : utf8_decode(s)) append_utf8(out, f(cp));
  return out;
}

// Python's title()/capitalize() treat "cased" characters as word characters.
bool is_cased(char32_t cp) { return to_upper_cp(cp) != cp || to_lower_cp(cp) != cp; }

}  // namespace

std::string py_upper(std::string_view s) {
  return map_code_points(s, [](char32_t cp) { return to_upper_cp(cp); });
}

std::string py_lower(std::string_view s) {
  return map_code_points(s, [](char32_t cp) { return to_lower_cp(cp); });
}

std::string py_title(std::string_view s) {
  bool prev_cased = false;
  return map_code_points(s, [&](char32_t cp) {
    char32_t r = prev_cased ? to_lower_cp(cp) : to_upper_cp(cp);
    prev_cased = is_cased(cp);
    return r;
  });
}

std::string py_capitalize(std::string_view s) {
  bool first = true;
  return map_code_points(s, [&](char32_t cp) {
    char32_t r = first ? to_upper_cp(cp) : to_lower_cp(cp);
    first = false;
    return r;
  });
}

std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::u32string set;
  if (chars != nullptr) set = utf8_decode(*chars);
  // Sorted: a long `chars` must not make stripping a long string quadratic.
  std::sort(set.begin(), set.end());
  auto strip_it = [&](char32_t cp) {
    if (chars == nullptr) return is_py_space(cp);
    return std::binary_search(set.begin(), set.end(), cp);
  };
  if (is_ascii(s) && (chars == nullptr || is_ascii(*chars))) {
    size_t b = 0;
    size_t e = s.size();
    if (left) {
      while (b < e && strip_it(static_cast<char32_t>(s[b]))) ++b;
    }
    if (right) {
      while (e > b && strip_it(static_cast<char32_t>(s[e - 1]))) --e;
    }
    return std::string(s.substr(b, e - b));
  }
  std::u32string u = utf8_decode(s);
  size_t b = 0;
  size_t e = u.size();
  if (left) {
    while (b < e && strip_it(u[b])) ++b;
  }
  if (right) {
    while (e > b && strip_it(u[e - 1])) --e;
  }
  return utf8_encode(std::u32string_view(u).substr(b, e - b));
}

}  // namespace sgl::tokenizer::jinja
