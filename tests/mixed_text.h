// mixed_text: a seeded mix of prose, code, numbers, whitespace and several scripts, for tests
// that tokenize a lot of realistic text.
#pragma once

#include <cstdint>
#include <string>

namespace sgl::test {

// Prose, code, numbers, whitespace runs and several scripts (precomposed and decomposed accents,
// CJK, Hangul, emoji), in a seeded order, to at least `bytes` bytes.
inline std::string mixed_text(size_t bytes) {
  static const char* const kFragments[] = {
      "The quick brown fox jumps over the lazy dog. ",
      "It's what we'd've done, isn't it? ",
      "    for (int i = 0; i < n; ++i) {\n        sum += a[i] * 31;\n    }\n",
      "def f(x):\n\treturn x ** 2 + 1  # square\n",
      "<div class=\"note\">&amp; 42</div>\n",
      "3.14159 2026-11-25 1234567890 +1,000,000 ",
      "F\xC3\xBC\xC3\x9F"
      "e \xC3\xBC"
      "ber Stra\xC3\x9F"
      "e, na\xC3\xAFve caf\xC3\xA9. ",
      "Cafe\xCC\x81 re\xCC\x81sume\xCC\x81 ",
      "\xE4\xB8\xAD\xE6\x96\x87\xE5\x88\x86\xE8\xAF\x8D\xEF\xBC\x8C\xE5\x8C\x97\xE4\xBA\xAC\xE3"
      "\x80\x82",
      "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82, \xD0\xBC\xD0\xB8\xD1\x80! ",
      "\xEC\x95\x88\xEB\x85\x95\xED\x95\x98\xEC\x84\xB8\xEC\x9A\x94 ",
      "emoji \xF0\x9F\x98\x80\xF0\x9F\x8E\x89\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD ",
      "\t\t  \n\n   ",
      "a,b;c:d!e?f(g)[h]{i} ",
  };
  constexpr size_t kCount = sizeof(kFragments) / sizeof(kFragments[0]);
  std::string text;
  text.reserve(bytes + 256);
  uint64_t state = 0x9E3779B97F4A7C15ull;
  while (text.size() < bytes) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    text += kFragments[(state >> 33) % kCount];
  }
  return text;
}

}  // namespace sgl::test
