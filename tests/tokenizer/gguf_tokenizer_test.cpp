// Tokenizer from GGUF metadata: synthetic GGUFs from testdata tokenizer.json files, SmolLM2 golden.
#include "tokenizer/gguf_tokenizer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/gguf_test_util.h"
#include "test_data.h"
#include "tokenizer/chat_template/chat_template.h"
#include "tokenizer/chat_template/json_value.h"
#include "tokenizer/file_reader.h"

namespace sgl::tokenizer {
namespace {

using Json = nlohmann::json;
using model::test_util::GgufWriter;
namespace tu = model::test_util;

const std::filesystem::path kTestdata = sgl::test::testdata_dir();

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The texts of a ggml vocab vector file (each followed by "\n__ggml_vocab_test__\n").
std::vector<std::string> vector_texts(const std::string& vocab) {
  const std::string inp = slurp(kTestdata / "tokenizers" / "vectors" / (vocab + ".inp"));
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0, end; (end = inp.find(separator, pos)) != std::string::npos;
       pos = end + separator.size()) {
    texts.push_back(inp.substr(pos, end - pos));
  }
  return texts;
}

// Writes `bytes` to a fresh temporary file and returns its path.
std::filesystem::path write_temp(const std::string& bytes, const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("sgl_gguf_tok_" + std::to_string(getpid()) + "_" + name + ".gguf");
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

struct SyntheticGguf {
  std::string model = "gpt2";
  std::string pre;
  bool add_bos = false;
  bool with_scores = false;  // sentencepiece: scores (from the merge ranks), no merges
  bool add_space_prefix = true;
};

// A GGUF whose tokenizer.* metadata is llama.cpp's rendering of a tokenizer.json (+ config).
std::string gguf_from_tokenizer_json(const std::string& dir, const SyntheticGguf& opt) {
  auto text = read_file(kTestdata / "tokenizers" / dir / "tokenizer.json.gz");
  EXPECT_TRUE(text.ok()) << text.status().to_string();
  const Json doc = Json::parse(*text);
  const Json config = Json::parse(slurp(kTestdata / "tokenizers" / dir / "tokenizer_config.json"));
  const Json& vocab = doc["model"]["vocab"];
  int64_t size = 0;
  for (const auto& [token, id] : vocab.items())
    size = std::max<int64_t>(size, id.get<int64_t>() + 1);
  for (const Json& t : doc["added_tokens"])
    size = std::max<int64_t>(size, t["id"].get<int64_t>() + 1);
  std::vector<std::string> tokens(size);
  std::vector<int32_t> types(size, 1);
  std::vector<float> scores(size, 0.0f);
  for (int64_t i = 0; i < size; ++i) tokens[i] = "[PAD" + std::to_string(i) + "]";
  for (const auto& [token, id] : vocab.items()) {
    tokens[id.get<int64_t>()] = token;
    if (token.size() == 6 && token.rfind("<0x", 0) == 0) types[id.get<int64_t>()] = 6;
  }
  // Sentencepiece scores: a merged piece ranks by the first merge that makes it; the rest (single
  // characters, bytes, specials) get the lowest score, so merge order is what the scores say.
  if (opt.with_scores) {
    std::fill(scores.begin(), scores.end(), -1e9f);
    const Json& merges = doc["model"]["merges"];
    for (size_t rank = merges.size(); rank-- > 0;) {
      const Json& m = merges[rank];
      const std::string merged =
          m.is_string() ? [&] {
            std::string s = m.get<std::string>();
            s.erase(s.find(' '), 1);
            return s;
          }()
                        : m[0].get<std::string>() + m[1].get<std::string>();
      if (vocab.contains(merged)) scores[vocab[merged].get<int64_t>()] = -static_cast<float>(rank);
    }
  }
  for (const Json& t : doc["added_tokens"]) {
    const int64_t id = t["id"].get<int64_t>();
    tokens[id] = t["content"].get<std::string>();
    types[id] = t["special"].get<bool>() ? 3 : 4;
  }
  auto id_of = [&](const char* key) -> int64_t {
    const Json& v = config.contains(key) ? config[key] : Json();
    const std::string s = v.is_string()   ? v.get<std::string>()
                          : v.is_object() ? v["content"].get<std::string>()
                                          : std::string();
    for (int64_t i = 0; i < size; ++i) {
      if (!s.empty() && tokens[i] == s) return i;
    }
    return -1;
  };
  if (const int64_t unk = id_of("unk_token"); unk >= 0) types[unk] = 2;

  GgufWriter w;
  w.kv("general.architecture", tu::gguf_string("llama"));
  w.kv("tokenizer.ggml.model", tu::gguf_string(opt.model));
  if (!opt.pre.empty()) w.kv("tokenizer.ggml.pre", tu::gguf_string(opt.pre));
  w.kv("tokenizer.ggml.tokens", tu::gguf_string_array(tokens));
  w.kv("tokenizer.ggml.token_type", tu::gguf_i32_array(types));
  if (opt.with_scores) {
    w.kv("tokenizer.ggml.scores", tu::gguf_f32_array(scores));
    w.kv("tokenizer.ggml.add_space_prefix", tu::gguf_bool(opt.add_space_prefix));
  } else {
    std::vector<std::string> merges;
    for (const Json& m : doc["model"]["merges"]) {
      merges.push_back(m.is_string() ? m.get<std::string>()
                                     : m[0].get<std::string>() + " " + m[1].get<std::string>());
    }
    w.kv("tokenizer.ggml.merges", tu::gguf_string_array(merges));
  }
  for (const auto& [key, name] : {std::pair{"bos_token", "tokenizer.ggml.bos_token_id"},
                                  std::pair{"eos_token", "tokenizer.ggml.eos_token_id"},
                                  std::pair{"unk_token", "tokenizer.ggml.unknown_token_id"}}) {
    if (const int64_t id = id_of(key); id >= 0) w.kv(name, tu::gguf_u32(id));
  }
  w.kv("tokenizer.ggml.add_bos_token", tu::gguf_bool(opt.add_bos));
  return w.bytes();
}

struct ParityCase {
  const char* name;
  const char* dir;
  const char* vectors;
  SyntheticGguf gguf;
};

void PrintTo(const ParityCase& c, std::ostream* os) { *os << c.name; }

class GgufParityTest : public ::testing::TestWithParam<ParityCase> {};

TEST_P(GgufParityTest, EncodesVectorsLikeTokenizerJson) {
  const ParityCase& c = GetParam();
  auto reference = Tokenizer::from_dir(kTestdata / "tokenizers" / c.dir);
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();
  const auto path = write_temp(gguf_from_tokenizer_json(c.dir, c.gguf), c.name);
  auto file = model::GgufFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto from_gguf = tokenizer_from_gguf(*file);
  ASSERT_TRUE(from_gguf.ok()) << from_gguf.status().to_string();
  // Tokenizer::from_dir takes the .gguf file too.
  auto via_from_dir = Tokenizer::from_dir(path);
  ASSERT_TRUE(via_from_dir.ok()) << via_from_dir.status().to_string();
  std::filesystem::remove(path);
  const Tokenizer& want = **reference;
  const Tokenizer& got = **from_gguf;

  EXPECT_EQ(got.bos_token_id(), want.bos_token_id());
  EXPECT_EQ(got.bos_token(), want.bos_token());
  EXPECT_EQ(got.eos_token(), want.eos_token());
  const std::vector<std::string> texts = vector_texts(c.vectors);
  ASSERT_GE(texts.size(), 40u);
  for (bool special : {false, true}) {
    const EncodeOptions options{special};
    for (const std::string& text : texts) {
      const std::vector<int32_t> ids = got.encode(text, options);
      EXPECT_EQ(ids, want.encode(text, options)) << "special=" << special << " text: " << text;
      EXPECT_EQ((*via_from_dir)->encode(text, options), ids);
      EXPECT_EQ(got.decode(ids, {}), want.decode(ids, {})) << text;
    }
  }
  for (const char* text : {"<|im_start|>user\nhi<|im_end|>", "<|begin_of_text|>x<|eot_id|>",
                           "<think>a</think>", "<s>[INST] hi [/INST]</s>"}) {
    EXPECT_EQ(got.encode(text, {false}), want.encode(text, {false})) << text;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Testdata, GgufParityTest,
    ::testing::Values(ParityCase{"qwen3", "qwen3", "qwen2", {"gpt2", "qwen2", false}},
                      ParityCase{"llama3_1", "llama3_1", "llama-bpe", {"gpt2", "llama-bpe", true}},
                      ParityCase{"llama2", "llama2", "llama-spm", {"llama", "", true, true}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(GgufTokenizerTest, UnknownPreTokenizerIsUnimplemented) {
  GgufWriter w;
  w.kv("tokenizer.ggml.model", tu::gguf_string("gpt2"));
  w.kv("tokenizer.ggml.pre", tu::gguf_string("no-such-pre"));
  w.kv("tokenizer.ggml.tokens", tu::gguf_string_array({"a", "b", "ab"}));
  w.kv("tokenizer.ggml.merges", tu::gguf_string_array({"a b"}));
  const auto path = write_temp(w.bytes(), "badpre");
  auto tok = Tokenizer::from_dir(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(tok.status().message().find("no-such-pre"), std::string::npos)
      << tok.status().to_string();
}

TEST(GgufTokenizerTest, UnknownModelIsUnimplemented) {
  GgufWriter w;
  w.kv("tokenizer.ggml.model", tu::gguf_string("t5"));
  w.kv("tokenizer.ggml.tokens", tu::gguf_string_array({"a"}));
  const auto path = write_temp(w.bytes(), "badmodel");
  auto tok = Tokenizer::from_dir(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(tok.status().message().find("t5"), std::string::npos);
}

// The status of loading the tokenizer of a GGUF file holding `w`'s metadata.
Status load_status(const GgufWriter& w, const std::string& name) {
  const auto path = write_temp(w.bytes(), name);
  const Status status = Tokenizer::from_dir(path).status();
  std::filesystem::remove(path);
  return status;
}

// A hostile vocabulary is refused before the tokenizer builds tables from it: more tokens than
// any model has, or (sentencepiece) tokens so long that deriving merges would take hours.
TEST(GgufTokenizerTest, HostileVocabulariesAreRefused) {
  constexpr uint64_t kTokens = (uint64_t{1} << 22) + 1;
  const std::string one = tu::le_bytes<uint64_t>(1) + "a";  // the string "a"
  std::string tokens = tu::le_bytes<uint32_t>(8) + tu::le_bytes<uint64_t>(kTokens);
  tokens.reserve(tokens.size() + kTokens * one.size());
  for (uint64_t i = 0; i < kTokens; ++i) tokens += one;
  GgufWriter many;
  many.kv("tokenizer.ggml.model", tu::gguf_string("gpt2"));
  many.kv("tokenizer.ggml.tokens", {9, tokens});
  Status status = load_status(many, "many");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("tokenizer.ggml.tokens has 4194305 entries"), std::string::npos)
      << status.to_string();

  GgufWriter long_token;
  long_token.kv("tokenizer.ggml.model", tu::gguf_string("llama"));
  long_token.kv("tokenizer.ggml.tokens",
                tu::gguf_string_array({"<unk>", "a", std::string(40000, 'a')}));
  long_token.kv("tokenizer.ggml.scores", tu::gguf_f32_array({0, -1, -2}));
  status = load_status(long_token, "long");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("has 40000 bytes) exceeds the work limit"), std::string::npos)
      << status.to_string();

  // Two tokens that are not UTF-8 would both become U+FFFD in the synthesized tokenizer.json.
  GgufWriter bad_utf8;
  bad_utf8.kv("tokenizer.ggml.model", tu::gguf_string("gpt2"));
  bad_utf8.kv("tokenizer.ggml.tokens", tu::gguf_string_array({"a", "\xff", "\xfe"}));
  bad_utf8.kv("tokenizer.ggml.merges", tu::gguf_string_array({}));
  status = load_status(bad_utf8, "bad_utf8");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("tokenizer.ggml.tokens[1] is not valid UTF-8"), std::string::npos)
      << status.to_string();
}

// The real SmolLM2-135M-Instruct GGUF against goldens from HF (make_smollm2_tokenizer_golden.py).

class SmolLM2GgufTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto path = test::smollm2_gguf_path();
    if (path.empty() || !std::filesystem::exists(path)) {
      GTEST_SKIP() << "SmolLM2 GGUF not found (set SGL_SMOLLM2_GGUF or run "
                      "scripts/fetch_default_model.sh)";
    }
    auto tok = Tokenizer::from_dir(path);
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    tok_ = std::move(*tok);
    golden_ = Json::parse(
        slurp(sgl::test::test_data_dir("tokenizer") / "smollm2_gguf_tokenizer_golden.json"));
  }
  std::unique_ptr<Tokenizer> tok_;
  Json golden_;
};

TEST_F(SmolLM2GgufTest, SpecialTokens) {
  EXPECT_EQ(tok_->vocab_size(), golden_["vocab_size"].get<int64_t>());
  EXPECT_EQ(tok_->bos_token(), golden_["bos_token"].get<std::string>());
  EXPECT_EQ(tok_->eos_token(), golden_["eos_token"].get<std::string>());
  EXPECT_EQ(tok_->bos_token_id(), 1);
  EXPECT_EQ(tok_->eos_token_ids(), std::vector<int32_t>{2});
  EXPECT_TRUE(tok_->is_special(2));
  // add_bos_token is false: no BOS even with special tokens on.
  EXPECT_EQ(tok_->encode("Hi", {true}), tok_->encode("Hi", {false}));
}

TEST_F(SmolLM2GgufTest, EncodeMatchesHf) {
  const Json& cases = golden_["encode"];
  ASSERT_GE(cases.size(), 200u);
  size_t mismatches = 0;
  for (const Json& c : cases) {
    const std::string text = c["text"].get<std::string>();
    const std::vector<int32_t> want = c["ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> got = tok_->encode(text, {false});
    if (got != want) ++mismatches;
    EXPECT_EQ(got, want) << "text: " << Json(text).dump();
    EXPECT_EQ(tok_->decode(got, {false}), text);
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST_F(SmolLM2GgufTest, ChatTemplateMatchesTransformers) {
  ASSERT_FALSE(tok_->chat_template().empty());
  auto tmpl = ChatTemplate::parse(tok_->chat_template());
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().to_string();
  ASSERT_GE(golden_["chat"].size(), 1u);
  for (const Json& c : golden_["chat"]) {
    ChatTemplateInputs inputs;
    auto messages = jinja::value_from_json(c["messages"].dump());
    ASSERT_TRUE(messages.ok()) << messages.status().to_string();
    inputs.messages = *messages;
    inputs.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    inputs.bos_token = tok_->bos_token().value_or("");
    inputs.eos_token = tok_->eos_token().value_or("");
    auto rendered = tmpl->apply(inputs);
    ASSERT_TRUE(rendered.ok()) << rendered.status().to_string();
    EXPECT_EQ(*rendered, c["rendered"].get<std::string>());
  }
}

}  // namespace
}  // namespace sgl::tokenizer
