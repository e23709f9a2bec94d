// Split behaviours and pre-tokenizers (expected values from HF tokenizers' pre_tokenize_str).
#include "tokenizer/pre_tokenizers.h"

#include <gtest/gtest.h>

namespace sgl::tokenizer {
namespace {

using Words = std::vector<std::string>;

Words run(PreTokenizerStep step, std::string text, bool at_start = true) {
  PreTokenizer pre;
  pre.add(std::move(step));
  Words words;
  pre.pre_tokenize(text, at_start, [&](std::string_view word) { words.emplace_back(word); });
  return words;
}

Words split_dash(SplitBehavior behavior, bool invert = false) {
  return run(pre_tokenizer::SplitString{"-", behavior, invert}, "the-final--countdown");
}

TEST(SplitPatternTest, Behaviors) {
  EXPECT_EQ(split_dash(SplitBehavior::kRemoved), (Words{"the", "final", "countdown"}));
  EXPECT_EQ(split_dash(SplitBehavior::kIsolated),
            (Words{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split_dash(SplitBehavior::kMergedWithPrevious),
            (Words{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split_dash(SplitBehavior::kMergedWithNext),
            (Words{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split_dash(SplitBehavior::kContiguous),
            (Words{"the", "-", "final", "--", "countdown"}));
  EXPECT_EQ(split_dash(SplitBehavior::kRemoved, /*invert=*/true), (Words{"-", "-", "-"}));
}

TEST(PreTokenizerTest, SplitRegexIsolated) {
  auto regex = Regex::compile(R"(\p{N}{1,3})");
  ASSERT_TRUE(regex.ok());
  EXPECT_EQ(
      run(pre_tokenizer::SplitRegex{std::move(regex).value(), SplitBehavior::kIsolated, false},
          "ab12345c"),
      (Words{"ab", "123", "45", "c"}));
}

// A tokenizer pattern past PCRE2's own match limit (catastrophic backtracking) ends the search
// there: the matches before are kept, the rest has none (and a warning says so), and the search
// returns instead of running for ages.
TEST(PreTokenizerTest, RegexPastPcre2sLimitEndsTheSearch) {
  auto regex = Regex::compile("x|(a+)+b");
  ASSERT_TRUE(regex.ok()) << regex.status().to_string();
  std::vector<ByteRange> matches;
  regex->find_all("x" + std::string(40, 'a') + "x", matches);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(matches[0].begin, 0u);
}

TEST(PreTokenizerTest, ByteLevel) {
  EXPECT_EQ(run(pre_tokenizer::ByteLevel{false, true}, "Hello my friend, how?"),
            (Words{"Hello", "\xC4\xA0my", "\xC4\xA0\x66riend", ",", "\xC4\xA0how", "?"}));
  EXPECT_EQ(run(pre_tokenizer::ByteLevel{true, false}, "Hi\n"), (Words{"\xC4\xA0Hi\xC4\x8A"}));
}

TEST(PreTokenizerTest, MetaspaceSchemes) {
  using pre_tokenizer::PrependScheme;
  const std::string b = "\xE2\x96\x81";
  EXPECT_EQ(run(pre_tokenizer::Metaspace{b, PrependScheme::kFirst, true}, "hi  there"),
            (Words{b + "hi", b, b + "there"}));
  EXPECT_EQ(run(pre_tokenizer::Metaspace{b, PrependScheme::kFirst, true}, "hi", false),
            (Words{"hi"}));
  EXPECT_EQ(run(pre_tokenizer::Metaspace{b, PrependScheme::kAlways, false}, "hi  there", false),
            (Words{b + "hi" + b + b + "there"}));
  EXPECT_EQ(run(pre_tokenizer::Metaspace{b, PrependScheme::kNever, true}, "hi there"),
            (Words{"hi", b + "there"}));
}

TEST(PreTokenizerTest, DigitsPunctuationWhitespace) {
  EXPECT_EQ(run(pre_tokenizer::Digits{false},
                "a12\xD9\xA3"
                "4b"),
            (Words{"a",
                   "12\xD9\xA3"
                   "4",
                   "b"}));
  EXPECT_EQ(run(pre_tokenizer::Digits{true}, "a12b"), (Words{"a", "1", "2", "b"}));
  EXPECT_EQ(run(pre_tokenizer::Punctuation{SplitBehavior::kIsolated}, "a,b!!$"),
            (Words{"a", ",", "b", "!", "!", "$"}));
  EXPECT_EQ(run(pre_tokenizer::Whitespace{},
                "h\xC3\xA9llo wor_ld a\xCC\x81"
                "b 12! x"),
            (Words{"h\xC3\xA9llo", "wor_ld",
                   "a\xCC\x81"
                   "b",
                   "12", "!", "x"}));
  EXPECT_EQ(run(pre_tokenizer::WhitespaceSplit{},
                " a\tb\xE3\x80\x80"
                "c "),
            (Words{"a", "b", "c"}));
  EXPECT_EQ(run(pre_tokenizer::Bert{}, "Hey, you!"), (Words{"Hey", ",", "you", "!"}));
  EXPECT_EQ(run(pre_tokenizer::CharDelimiter{U'x'}, "axbxxc"), (Words{"a", "b", "c"}));
}

TEST(PreTokenizerTest, EmptyInputAndNoSteps) {
  EXPECT_TRUE(run(pre_tokenizer::WhitespaceSplit{}, "").empty());
  EXPECT_TRUE(run(pre_tokenizer::WhitespaceSplit{}, "   ").empty());
  PreTokenizer none;
  Words words;
  none.pre_tokenize("as is", true, [&](std::string_view word) { words.emplace_back(word); });
  EXPECT_EQ(words, Words{"as is"});
}

}  // namespace
}  // namespace sgl::tokenizer
