// Decoders (expected values from HF tokenizers' decoders.*.decode).
#include "tokenizer/decoders.h"

#include <gtest/gtest.h>

namespace sgl::tokenizer {
namespace {

using Tokens = std::vector<std::string>;

TEST(DecoderTest, ByteLevel) {
  Decoder dec;
  dec.add(decoder::ByteLevel{});
  // Tokens outside the byte alphabet pass through; invalid bytes become U+FFFD.
  EXPECT_EQ(dec.decode({"Hello", "\xC4\xA0w", "orld", "<|im_start|>", "\xC3\xA2\xC4\xA4\xC2\xAC",
                        "\xC3\x83"}),
            "Hello world<|im_start|>\xE2\x82\xAC\xEF\xBF\xBD");
}

TEST(DecoderTest, SentencepieceChain) {
  Decoder dec;
  dec.add(decoder::ReplaceString{"\xE2\x96\x81", " "});
  dec.add(decoder::ByteFallback{});
  dec.add(decoder::Fuse{});
  dec.add(decoder::Strip{" ", 1, 0});
  EXPECT_EQ(
      dec.decode({"\xE2\x96\x81Hi", "<0xE2>", "<0x82>", "<0xAC>", "\xE2\x96\x81", "<0xFF>", "x"}),
      "Hi\xE2\x82\xAC \xEF\xBF\xBDx");
}

TEST(DecoderTest, StripNeverOverruns) {
  Decoder dec;
  dec.add(decoder::Strip{" ", 2, 2});
  EXPECT_EQ(dec.decode({" ", "", "  a  ", "   "}), "a");
}

TEST(DecoderTest, MetaspaceDropsReplacementsOfFirstToken) {
  Decoder dec;
  dec.add(decoder::Metaspace{"\xE2\x96\x81", pre_tokenizer::PrependScheme::kAlways});
  EXPECT_EQ(dec.decode({"\xE2\x96\x81\xE2\x96\x81"
                        "a\xE2\x96\x81"
                        "b",
                        "\xE2\x96\x81"
                        "c"}),
            "ab c");
  Decoder never;
  never.add(decoder::Metaspace{"\xE2\x96\x81", pre_tokenizer::PrependScheme::kNever});
  EXPECT_EQ(never.decode({"\xE2\x96\x81"
                          "a",
                          "\xE2\x96\x81"
                          "c"}),
            " a c");
}

TEST(DecoderTest, WordPieceBpeSuffixReplaceRegex) {
  Decoder wordpiece;
  wordpiece.add(decoder::WordPiece{"##", true});
  EXPECT_EQ(wordpiece.decode({"hello", "##wor", "##ld", ".", "do", "n't"}), "helloworld. don't");
  Decoder suffix;
  suffix.add(decoder::BpeSuffix{"</w>"});
  EXPECT_EQ(suffix.decode({"hel", "lo</w>", "world</w>"}), "hello world");
  auto regex = Regex::compile("a+");
  ASSERT_TRUE(regex.ok());
  Decoder replace;
  replace.add(decoder::ReplaceRegex{std::move(regex).value(), "-"});
  EXPECT_EQ(replace.decode({"baaa", "a"}), "b--");
}

TEST(DecoderTest, NoDecoderJoinsWithSpaces) {
  Decoder none;
  EXPECT_EQ(none.decode({"a", "b", "c"}), "a b c");
  Decoder empty_sequence;
  empty_sequence.set_present();
  EXPECT_EQ(empty_sequence.decode({"a", "b"}), "ab");
}

TEST(DecoderTest, CleanUpTokenizationSpaces) {
  EXPECT_EQ(clean_up_tokenization("Hello , world . I 'm sure it 's ok ! do not"),
            "Hello, world. I'm sure it's ok! do not");
}

}  // namespace
}  // namespace sgl::tokenizer
