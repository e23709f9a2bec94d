// Regex: Oniguruma-to-PCRE2 translation and match iteration.
#include "tokenizer/regex.h"

#include <gtest/gtest.h>

namespace sgl::tokenizer {
namespace {

std::vector<std::string> matches(std::string_view pattern, std::string_view text) {
  auto regex = Regex::compile(pattern);
  EXPECT_TRUE(regex.ok()) << regex.status().to_string();
  std::vector<ByteRange> ranges;
  if (regex.ok()) regex->find_all(text, ranges);
  std::vector<std::string> out;
  for (const ByteRange& r : ranges) out.emplace_back(text.substr(r.begin, r.end - r.begin));
  return out;
}

TEST(RegexTest, TranslatesOnigurumaClasses) {
  const std::string s = translate_oniguruma_pattern(R"(\s+|[^\s\p{L}]|\S|\w|\h)");
  EXPECT_EQ(s.find("\\s"), std::string::npos);
  EXPECT_EQ(s.find("\\S"), std::string::npos);
  EXPECT_EQ(s.find("\\w"), std::string::npos);
  EXPECT_NE(s.find("0-9a-fA-F"), std::string::npos);
  EXPECT_EQ(translate_oniguruma_pattern(R"(\\s[\]s]\d)"), R"(\\s[\]s]\d)");
  EXPECT_EQ(translate_oniguruma_pattern("[]a]"), "[]a]");
}

TEST(RegexTest, WhitespaceIsUnicodeWhiteSpace) {
  // U+180E is not White_Space (PCRE2's own \s would match it); U+3000 is.
  EXPECT_EQ(matches(R"(\s+)",
                    "a\xE1\xA0\x8E"
                    "b\xE3\x80\x80"
                    "c"),
            std::vector<std::string>{"\xE3\x80\x80"});
}

TEST(RegexTest, Gpt2Pattern) {
  const char* kPattern =
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
  EXPECT_EQ(
      matches(kPattern, "Hello world's  3 caf\xC3\xA9!!\n"),
      (std::vector<std::string>{"Hello", " world", "'s", " ", " 3", " caf\xC3\xA9", "!!", "\n"}));
}

TEST(RegexTest, CaseInsensitiveGroupsAndLookahead) {
  EXPECT_EQ(matches(R"((?i:'s|'ll)|\p{L}+)", "IT'S we'LL"),
            (std::vector<std::string>{"IT", "'S", "we", "'LL"}));
}

TEST(RegexTest, EmptyMatchesAdvanceByCharacter) {
  // As Oniguruma's iterator: no empty match where the previous match ended.
  EXPECT_EQ(matches("x*", "\xC3\xA9x"), (std::vector<std::string>{"", "x"}));
  EXPECT_EQ(matches("a*", "aab"), (std::vector<std::string>{"aa", ""}));
}

TEST(RegexTest, BadPatternIsAnError) {
  auto regex = Regex::compile("(unclosed");
  ASSERT_FALSE(regex.ok());
  EXPECT_EQ(regex.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(regex.status().message().find("(unclosed"), std::string::npos);
}

TEST(RegexTest, MovedFromRegexMatchesNothing) {
  auto regex = Regex::compile("a");
  ASSERT_TRUE(regex.ok());
  Regex moved = std::move(regex).value();
  std::vector<ByteRange> out;
  moved.find_all("banana", out);
  EXPECT_EQ(out.size(), 3u);
}

}  // namespace
}  // namespace sgl::tokenizer
