// Unicode helpers: lossy UTF-8 repair (Rust from_utf8_lossy semantics), classes, normalization.
#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

namespace sgl::tokenizer::unicode {
namespace {

const std::string kFffd(kReplacementChar);

TEST(UnicodeTest, ValidUtf8IsUnchanged) {
  const std::string text = "a\xC3\xA9\xE4\xB8\x96\xF0\x9F\x98\x80";
  EXPECT_TRUE(is_valid_utf8(text));
  EXPECT_EQ(to_valid_utf8_lossy(text), text);
  EXPECT_TRUE(is_valid_utf8(""));
}

TEST(UnicodeTest, LossyReplacesMaximalInvalidPrefixes) {
  // Truncated 4-byte sequence: one U+FFFD for the valid prefix.
  EXPECT_EQ(to_valid_utf8_lossy("Hello \xF0\x90\x80World"), "Hello " + kFffd + "World");
  // Overlong encoding: E0 80 is never valid, so each byte is replaced.
  EXPECT_EQ(to_valid_utf8_lossy("\xE0\x80\xAF"), kFffd + kFffd + kFffd);
  // UTF-16 surrogates are invalid in UTF-8.
  EXPECT_EQ(to_valid_utf8_lossy("\xED\xA0\x80"), kFffd + kFffd + kFffd);
  // Lone continuation bytes, invalid lead bytes, truncation at the end.
  EXPECT_EQ(to_valid_utf8_lossy("\x80"
                                "a\xFF"
                                "b\xC3"),
            kFffd + "a" + kFffd + "b" + kFffd);
  // Above U+10FFFF.
  EXPECT_EQ(to_valid_utf8_lossy("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));
  EXPECT_FALSE(is_valid_utf8("\xF0\x9F\x98"));
}

TEST(UnicodeTest, DecodeAndAppendRoundTrip) {
  for (char32_t c : {U'\0', U'a', U'\u00e9', U'\u4e16', U'\U0001F600', U'\U0010FFFF'}) {
    std::string s;
    append_utf8(s, c);
    size_t pos = 0;
    EXPECT_EQ(decode_utf8(s, pos), c);
    EXPECT_EQ(pos, s.size());
  }
}

TEST(UnicodeTest, CharacterClasses) {
  for (char32_t c : {U' ', U'\t', U'\n', U'\r', U'\v', U'\f', U'\u0085', U'\u00a0', U'\u3000',
                     U'\u2009', U'\u2028'}) {
    EXPECT_TRUE(is_whitespace(c)) << static_cast<uint32_t>(c);
  }
  for (char32_t c : {U'a', U'\u200b', U'\u180e', U'\x1b'}) EXPECT_FALSE(is_whitespace(c));
  EXPECT_TRUE(is_numeric(U'7'));
  EXPECT_TRUE(is_numeric(U'\u0663'));  // Arabic-Indic three
  EXPECT_TRUE(is_numeric(U'\u00bd'));  // No
  EXPECT_FALSE(is_numeric(U'x'));
  EXPECT_TRUE(is_punctuation(U'$'));  // ASCII punctuation includes symbols
  EXPECT_TRUE(is_punctuation(U'\u2014'));
  EXPECT_TRUE(is_punctuation(U'\u00bf'));
  EXPECT_FALSE(is_punctuation(U'\u20ac'));  // Sc outside ASCII
  EXPECT_TRUE(is_word_char(U'_'));
  EXPECT_TRUE(is_word_char(U'\u0301'));  // combining acute
  EXPECT_FALSE(is_word_char(U'-'));
  EXPECT_TRUE(is_combining_mark(U'\u0301'));
  EXPECT_TRUE(is_combining_mark(U'\u0903'));  // Mc
  EXPECT_FALSE(is_combining_mark(U'a'));
}

TEST(UnicodeTest, LowercaseUsesFullMapping) {
  EXPECT_EQ(to_lowercase("HeLLo"), "hello");
  EXPECT_EQ(to_lowercase("\xC4\xB0stanbul"), "i\xCC\x87stanbul");  // İ -> i + U+0307
  EXPECT_EQ(to_lowercase("\xCE\xA3\xCE\x91\xCE\xA3"), "\xCF\x83\xCE\xB1\xCF\x83");  // no final σ
}

TEST(UnicodeTest, NormalizationForms) {
  EXPECT_EQ(nfc("e\xCC\x81"), "\xC3\xA9");
  EXPECT_EQ(nfd("\xC3\xA9"), "e\xCC\x81");
  EXPECT_EQ(nfkc("\xEF\xAC\x81"), "fi");  // ligature
  EXPECT_EQ(nfkd("\xC2\xB2"), "2");
  EXPECT_EQ(nfc("plain ascii"), "plain ascii");
  EXPECT_EQ(nfc(std::string("a\0b", 3)), std::string("a\0b", 3));
}

// Long texts go through utf8proc in chunks cut before ASCII characters. Copies of three parts,
// each normalized by one utf8proc call (short of a chunk, or free of ASCII), must normalize as a
// whole to the copies of the normalized parts; a cut anywhere else, in the run longer than a
// chunk, would split jamo that compose or a mark from its base.
TEST(UnicodeTest, LongTextsNormalizeAsTheirParts) {
  std::string run;  // 78000 bytes, no ASCII: jamo composing to a syllable, ü + U+0301 to ǘ
  for (int i = 0; i < 6000; ++i) run += "\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8\xC3\xBC\xCC\x81";
  const std::string parts[] = {"e\xCC\x81 a\xCC\x81\xCC\xA3 ", run,
                               "x\xEF\xAC\x81\xC2\xB2\xCE\x90 "};
  std::string text;
  size_t copies = 0;
  for (; text.size() < (1u << 20); ++copies) {
    for (const std::string& part : parts) text += part;
  }
  for (auto form : {nfc, nfd, nfkc, nfkd}) {
    std::string normalized_parts;
    for (const std::string& part : parts) normalized_parts += form(part);
    std::string expected;
    for (size_t i = 0; i < copies; ++i) expected += normalized_parts;
    EXPECT_EQ(form(text), expected);
  }
}

}  // namespace
}  // namespace sgl::tokenizer::unicode
