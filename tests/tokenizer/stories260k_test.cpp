// stories260K tokenizer: golden prompt ids (with BOS) and greedy-continuation decode parity.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace sgl::tokenizer {
namespace {

const std::filesystem::path kTestdata = sgl::test::testdata_dir();
const std::filesystem::path kModelDir = kTestdata / "models" / "stories260K";

std::unique_ptr<Tokenizer> load() {
  auto tok = Tokenizer::from_dir(kModelDir);
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

nlohmann::json golden_cases() {
  std::ifstream in(kTestdata / "golden" / "stories260K.json");
  return nlohmann::json::parse(in)["cases"];
}

TEST(Stories260kTokenizerTest, PromptIdsMatchGolden) {
  auto tok = load();
  ASSERT_NE(tok, nullptr);
  const auto cases = golden_cases();
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    const auto prompt = c["prompt"].get<std::string>();
    const auto expected = c["prompt_ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok->encode(prompt, {}), expected) << prompt;
  }
}

TEST(Stories260kTokenizerTest, GreedyIdsDecodeToGoldenText) {
  auto tok = load();
  ASSERT_NE(tok, nullptr);
  for (const auto& c : golden_cases()) {
    const auto ids = c["greedy_ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok->decode(ids, {}), c["greedy_text"].get<std::string>());
  }
}

TEST(Stories260kTokenizerTest, PromptRoundTrips) {
  auto tok = load();
  ASSERT_NE(tok, nullptr);
  for (const auto& c : golden_cases()) {
    const auto prompt = c["prompt"].get<std::string>();
    EXPECT_EQ(tok->decode(tok->encode(prompt, {}), {}), prompt);
  }
}

TEST(Stories260kTokenizerTest, SpecialTokensAndMetadata) {
  auto tok = load();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->vocab_size(), 512);
  EXPECT_EQ(tok->bos_token_id(), 1);
  EXPECT_EQ(tok->eos_token_ids(), std::vector<int32_t>{2});
  EXPECT_EQ(tok->bos_token(), "<s>");
  EXPECT_EQ(tok->eos_token(), "</s>");
  EXPECT_TRUE(tok->is_special(0));
  EXPECT_TRUE(tok->is_special(1));
  EXPECT_TRUE(tok->is_special(2));
  EXPECT_FALSE(tok->is_special(3));
  EXPECT_EQ(tok->id_to_token(1), "<s>");
  EXPECT_EQ(tok->id_to_token(13), "<0x0A>");
  EXPECT_EQ(tok->id_to_token(512), std::nullopt);
  EXPECT_EQ(tok->id_to_token(-1), std::nullopt);
  EXPECT_EQ(tok->token_to_id("</s>"), 2);
  EXPECT_EQ(tok->token_to_id("no such token"), std::nullopt);
  EXPECT_TRUE(tok->chat_template().empty());
}

TEST(Stories260kTokenizerTest, AddSpecialTokensOff) {
  auto tok = load();
  ASSERT_NE(tok, nullptr);
  EncodeOptions no_special;
  no_special.add_special_tokens = false;
  EXPECT_EQ(tok->encode("Once upon a time", no_special),
            (std::vector<int32_t>{403, 407, 261, 378}));
  EXPECT_TRUE(tok->encode("", no_special).empty());
  EXPECT_EQ(tok->encode("", {}), std::vector<int32_t>{1});
}

TEST(Stories260kTokenizerTest, MatchesHfOnEdgeCases) {
  // Expected values from HF tokenizers 0.23 with this tokenizer.json.
  auto tok = load();
  ASSERT_NE(tok, nullptr);
  EncodeOptions no_special;
  no_special.add_special_tokens = false;
  // The Strip + collapse-spaces normalizer runs on each piece between special tokens.
  EXPECT_EQ(tok->encode("  hello   world  <s> x</s>", no_special),
            (std::vector<int32_t>{281, 306, 414, 263, 304, 341, 1, 410, 444, 2}));
  // Byte fallback for characters outside the 512-token vocab.
  const std::string mixed = "caf\u00e9 \u4e16\u754c \U0001F600!\n\nnew line";
  EXPECT_EQ(tok->encode(mixed, no_special),
            (std::vector<int32_t>{280, 412, 431, 485, 410, 231, 187, 153, 234, 152, 143, 410, 243,
                                  162, 155, 131, 443, 13,  13,  416, 411, 424, 278, 271, 411}));
  EXPECT_EQ(tok->decode(tok->encode(mixed, {}), {}), mixed);
  EXPECT_EQ(tok->encode("tab\there", no_special),
            (std::vector<int32_t>{259, 412, 430, 12, 260, 276}));

  // Decode skips specials and unknown ids; the Strip decoder only trims the fused text's start.
  EXPECT_EQ(tok->decode({1, 403, 2, 1000, 407}, {}), "Once upon");
  DecodeOptions keep;
  keep.skip_special_tokens = false;
  EXPECT_EQ(tok->decode({1, 403, 2, 407}, keep), "<s> Once</s> upon");
  // An invalid byte sequence decodes to one U+FFFD per byte.
  EXPECT_EQ(tok->decode({229, 133}, keep), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Stories260kTokenizerTest, InvalidUtf8IsReplaced) {
  auto tok = load();
  ASSERT_NE(tok, nullptr);
  EncodeOptions no_special;
  no_special.add_special_tokens = false;
  // Each maximal invalid sequence becomes U+FFFD before encoding (from_utf8_lossy).
  EXPECT_EQ(tok->encode("a\xFF"
                        "b\xE2\x82",
                        no_special),
            tok->encode("a\xEF\xBF\xBD"
                        "b\xEF\xBF\xBD",
                        no_special));
}

}  // namespace
}  // namespace sgl::tokenizer
