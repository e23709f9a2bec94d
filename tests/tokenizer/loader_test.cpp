// Loading: error Statuses naming file and field, tokenizer_config.json semantics, thread safety.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <thread>

#include "test_paths.h"
#include "tokenizer/file_reader.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_config.h"

namespace sgl::tokenizer {
namespace {

namespace fs = std::filesystem;

constexpr const char* kToyJson = R"({
  "version": "1.0",
  "added_tokens": [
    {"id": 0, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false,
     "normalized": false, "special": true},
    {"id": 1, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false,
     "normalized": false, "special": true}],
  "normalizer": null,
  "pre_tokenizer": {"type": "WhitespaceSplit"},
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]}}},
  "decoder": null,
  "model": {"type": "BPE", "vocab": {"<s>": 0, "</s>": 1, "a": 2, "b": 3, "ab": 4},
            "merges": ["a b"]}
})";

// A fresh directory under the test temp dir, private to this process (ctest runs tests of
// this binary in parallel processes).
fs::path make_dir(const std::string& name) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("sgl_tokenizer_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Replaces the first occurrence of `from` in the toy tokenizer.json.
std::string toy_with(const std::string& from, const std::string& to) {
  std::string json = kToyJson;
  const size_t pos = json.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) json.replace(pos, from.size(), to);
  return json;
}

// Loads `json` as <dir>/tokenizer.json and returns the error message ("" on success).
std::string load_error(const std::string& json, const std::string& config = "") {
  const fs::path dir = make_dir("load_error");
  write(dir / "tokenizer.json", json);
  if (!config.empty()) write(dir / "tokenizer_config.json", config);
  auto tok = Tokenizer::from_dir(dir);
  return tok.ok() ? "" : tok.status().to_string();
}

void expect_error(const std::string& message, std::initializer_list<const char*> parts) {
  EXPECT_FALSE(message.empty());
  for (const char* part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
}

TEST(LoaderTest, ToyTokenizerLoads) {
  const fs::path dir = make_dir("toy");
  write(dir / "tokenizer.json", kToyJson);
  auto tok = Tokenizer::from_dir(dir);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->encode("ab a b</s>", {}), (std::vector<int32_t>{0, 4, 2, 3, 1}));
  EXPECT_EQ((*tok)->decode({0, 4, 2, 3, 1}, {}), "ab a b");  // no decoder: joined by spaces
  EXPECT_EQ((*tok)->vocab_size(), 5);
  EXPECT_EQ((*tok)->bos_token_id(), std::nullopt);  // no tokenizer_config.json
}

TEST(LoaderTest, MissingFiles) {
  auto tok = Tokenizer::from_dir(make_dir("empty"));
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(Tokenizer::from_dir("/nonexistent/sgl/dir").ok());
}

TEST(LoaderTest, MalformedTokenizerJsonNamesFileAndField) {
  expect_error(load_error("{\"model\": "), {"tokenizer.json", "invalid JSON"});
  expect_error(load_error("[]"), {"tokenizer.json", "expected an object"});
  expect_error(load_error("{}"), {"tokenizer.json", "model"});
  expect_error(load_error(toy_with("\"type\": \"BPE\"", "\"type\": \"Unigram\"")),
               {"Unimplemented", "model.type", "Unigram"});
  expect_error(load_error(toy_with("\"a\": 2", "\"a\": \"two\"")), {"model.vocab.a"});
  expect_error(load_error(toy_with("\"a\": 2", "\"a\": -2")), {"model.vocab.a"});
  expect_error(load_error(toy_with("\"a b\"", "\"a c\"")), {"model.merges[0]", "'c'"});
  expect_error(load_error(toy_with("\"a b\"", "\"a b c\"")), {"model.merges[0]"});
  expect_error(load_error(toy_with("\"a b\"", "7")), {"model.merges[0]"});
  expect_error(load_error(toy_with("\"normalizer\": null",
                                   "\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": "
                                   "[{\"type\": \"NFC\"}, {\"type\": \"Nope\"}]}")),
               {"normalizer.normalizers[1].type", "Nope"});
  expect_error(load_error(toy_with("{\"type\": \"WhitespaceSplit\"}",
                                   "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"}, "
                                   "\"behavior\": \"Isolated\"}")),
               {"pre_tokenizer.pattern.Regex"});
  expect_error(load_error(toy_with("{\"type\": \"WhitespaceSplit\"}",
                                   "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"x\"}, "
                                   "\"behavior\": \"Sideways\"}")),
               {"pre_tokenizer.behavior", "Sideways"});
  expect_error(load_error(toy_with("\"content\": \"<s>\"", "\"contents\": \"<s>\"")),
               {"added_tokens[0].content"});
  expect_error(load_error(toy_with("\"decoder\": null", "\"decoder\": {\"type\": 3}")),
               {"decoder.type"});
  expect_error(load_error(toy_with("{\"SpecialToken\": {\"id\": \"<s>\"",
                                   "{\"SpecialToken\": {\"id\": \"<t>\"")),
               {"post_processor.single[0].SpecialToken.id", "<t>"});
}

TEST(LoaderTest, DeepNestingIsAnErrorNotACrash) {
  std::string nested = "null";
  for (int i = 0; i < 5000; ++i) {
    nested = "{\"type\": \"Sequence\", \"normalizers\": [" + nested + "]}";
  }
  expect_error(load_error(toy_with("\"normalizer\": null", "\"normalizer\": " + nested)),
               {"nests deeper than 128"});
}

// A gzip bomb (or a plain file past the bound) is refused while it is read, not read whole.
TEST(LoaderTest, FilesPastTheBoundAreRefused) {
  const fs::path dir = make_dir("bomb");
  const fs::path path = dir / "tokenizer.json";
  gzFile gz = gzopen(path.c_str(), "wb9");
  ASSERT_NE(gz, nullptr);
  const std::string zeros(1 << 20, '0');
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(gzwrite(gz, zeros.data(), static_cast<unsigned>(zeros.size())),
              static_cast<int>(zeros.size()));
  }
  gzclose(gz);
  EXPECT_LT(fs::file_size(path), 64u << 10);
  auto bomb = read_file(path, 1 << 20);
  ASSERT_FALSE(bomb.ok());
  expect_error(bomb.status().to_string(),
               {"DataLoss", "tokenizer.json", "larger than 1048576 bytes (decompressed)"});
  EXPECT_EQ(read_file(path, 8 << 20)->size(), 8u << 20);
}

TEST(LoaderTest, TruncatedGzipIsDataLoss) {
  const fs::path dir = make_dir("gz");
  const fs::path path = dir / "tokenizer.json.gz";
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_GT(gzwrite(gz, kToyJson, static_cast<unsigned>(std::strlen(kToyJson))), 0);
  gzclose(gz);
  auto ok = Tokenizer::from_dir(dir);
  EXPECT_TRUE(ok.ok()) << ok.status().to_string();
  fs::resize_file(path, fs::file_size(path) / 2);
  auto truncated = Tokenizer::from_dir(dir);
  ASSERT_FALSE(truncated.ok());
  expect_error(truncated.status().to_string(), {"DataLoss", "tokenizer.json.gz"});
}

TEST(LoaderTest, TokenizerConfigErrors) {
  expect_error(load_error(kToyJson, "{\"bos_token\": 5}"), {"tokenizer_config.json", "bos_token"});
  expect_error(load_error(kToyJson, "{\"chat_template\": [{\"name\": \"x\"}]}"),
               {"tokenizer_config.json", "chat_template[0].template"});
  expect_error(load_error(kToyJson, "{\"add_bos_token\": \"yes\"}"), {"add_bos_token"});
  expect_error(load_error(kToyJson, "{\"added_tokens_decoder\": {\"x\": {}}}"),
               {"added_tokens_decoder.x"});
}

TEST(LoaderTest, TokenizerConfigSpecialTokensAndTemplates) {
  const fs::path dir = make_dir("config");
  write(dir / "tokenizer.json", kToyJson);
  write(dir / "tokenizer_config.json", R"({
    "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
    "eos_token": "</s>",
    "add_bos_token": false,
    "add_eos_token": true,
    "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]
  })");
  write(dir / "generation_config.json", R"({"eos_token_id": [1, 4], "bos_token_id": 0})");
  auto tok = Tokenizer::from_dir(dir);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->bos_token(), "<s>");
  EXPECT_EQ((*tok)->bos_token_id(), 0);
  EXPECT_EQ((*tok)->eos_token_ids(), (std::vector<int32_t>{1, 4}));
  EXPECT_EQ((*tok)->chat_template(), "D");
  auto config = load_tokenizer_config(dir);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->named_chat_templates, (std::vector<std::pair<std::string, std::string>>{
                                              {"tool_use", "T"}, {"default", "D"}}));
  // Without a "default" entry the first listed applies (SGLang's fallback).
  write(
      dir / "tokenizer_config.json",
      R"({"chat_template": [{"name": "rag", "template": "R"}, {"name": "tool_use", "template": "T"}]})");
  auto no_default = load_tokenizer_config(dir);
  ASSERT_TRUE(no_default.ok()) << no_default.status().to_string();
  EXPECT_EQ(no_default->chat_template, "R");
  // add_bos_token=false drops the template's BOS; add_eos_token=true appends EOS.
  EXPECT_EQ((*tok)->encode("ab", {}), (std::vector<int32_t>{4, 1}));
  EncodeOptions raw;
  raw.add_special_tokens = false;
  EXPECT_EQ((*tok)->encode("ab", raw), (std::vector<int32_t>{4}));
}

TEST(LoaderTest, ChatTemplateFileAndAddBos) {
  const fs::path dir = make_dir("jinja");
  write(dir / "tokenizer.json",
        toy_with("{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}}, ", ""));
  // The file wins over the config's own template (transformers' order: it may be the newer).
  write(dir / "tokenizer_config.json",
        R"({"bos_token": "<s>", "add_bos_token": true, "chat_template": "stale"})");
  write(dir / "chat_template.jinja", "{{ messages }}");
  write(dir / "chat_template.json", R"({"chat_template": "processor's"})");
  auto tok = Tokenizer::from_dir(dir);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->chat_template(), "{{ messages }}");
  EXPECT_EQ((*tok)->encode("a", {}), (std::vector<int32_t>{0, 2}));  // BOS added by the config
  // Without the .jinja file the config's template stands; chat_template.json only replaces none.
  fs::remove(dir / "chat_template.jinja");
  EXPECT_EQ((*Tokenizer::from_dir(dir))->chat_template(), "stale");
  write(dir / "tokenizer_config.json", R"({"bos_token": "<s>", "add_bos_token": true})");
  EXPECT_EQ((*Tokenizer::from_dir(dir))->chat_template(), "processor's");
}

TEST(LoaderTest, HostileInputNeverCrashes) {
  auto tok = HfTokenizer::from_json(kToyJson);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  EXPECT_NO_FATAL_FAILURE((*tok)->encode(bytes + bytes, {}));
  EXPECT_EQ((*tok)->decode({-5, 99999, 2, 1 << 30}, {}), "a");
  EXPECT_EQ((*tok)->id_to_token(-1), std::nullopt);
  EXPECT_FALSE((*tok)->is_special(1 << 30));
}

TEST(LoaderTest, ConcurrentEncodeMatchesSerial) {
  auto tok = Tokenizer::from_dir(sgl::test::testdata_dir() / "tokenizers" / "qwen3");
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i) {
    texts.push_back("Sample " + std::to_string(i * 7919) + " caf\xC3\xA9 \xE4\xB8\x96\xE7\x95\x8C" +
                    std::string(static_cast<size_t>(i % 7), ' ') + "word" + std::to_string(i));
  }
  std::vector<std::vector<int32_t>> serial;
  for (const auto& t : texts) serial.push_back((*tok)->encode(t, {}));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      for (int rep = 0; rep < 5; ++rep) {
        for (size_t i = 0; i < texts.size(); ++i) {
          if ((*tok)->encode(texts[i], {}) != serial[i]) ++mismatches[w];
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

}  // namespace
}  // namespace sgl::tokenizer
