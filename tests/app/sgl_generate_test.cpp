// sgl-generate end to end: the golden continuation, JSON output, seeds, and clear loader errors
// with a non-zero exit (never a crash) for broken model directories.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "model/gguf_test_util.h"
#include "model/model_test_util.h"
#include "run_command.h"
#include "test_data.h"

namespace sgl {
namespace {

using test::RunResult;

RunResult run_generate(const std::string& args) {
  return test::run_tool("src/app/sgl-generate", args);
}

std::string stories() { return test::model_dir("stories260K").string(); }

TEST(SglGenerate, PrintsTheGoldenContinuation) {
  const auto golden = test::golden("stories260K")["cases"][0];
  ASSERT_EQ(golden["prompt"], "Once upon a time");
  const RunResult r = run_generate("--model-path " + stories() +
                                   " --prompt \"Once upon a time\" --max-new-tokens 48 "
                                   "--temperature 0 --ignore-eos");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, golden["greedy_text"].get<std::string>() + "\n");
}

// A flag that changes nothing here says so at the tool's default log level (warning).
TEST(SglGenerate, SaysWhichFlagsChangeNothing) {
  const RunResult r = run_generate("--model-path " + stories() +
                                   " --prompt-ids 1,2 --max-new-tokens 2 --enable-fp32-all-reduce");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("sgl-generate: --enable-fp32-all-reduce changes nothing"), std::string::npos)
      << r.out;
}

TEST(SglGenerate, JsonWithPromptIdsAndLogprobs) {
  const auto golden = test::golden("tiny-qwen3")["cases"][1];
  std::string ids;
  for (int id : golden["prompt_ids"]) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  const RunResult r = run_generate("--model-path " + test::model_dir("tiny-qwen3").string() +
                                   " --prompt-ids " + ids +
                                   " --max-new-tokens 16 --temperature 0 --ignore-eos "
                                   "--top-logprobs 5 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["prompt_ids"], golden["prompt_ids"]);
  EXPECT_EQ(out["output_ids"], golden["greedy_ids"]);
  ASSERT_EQ(out["logprobs"].size(), 16u);
  EXPECT_EQ(out["logprobs"][0].size(), 5u);
  EXPECT_NEAR(out["logprobs"][0][0]["logprob"].get<double>(),
              golden["steps_top5"][0]["logprobs"][0].get<double>(), 1e-3);
}

TEST(SglGenerate, SeededSamplingRepeatsAndStopsAtEos) {
  const std::string args = "--model-path " + stories() +
                           " --prompt \"The little dog\" --max-new-tokens 200 --temperature 1.0 "
                           "--top-p 0.95 --seed 7 --json";
  const RunResult a = run_generate(args), b = run_generate(args);
  ASSERT_EQ(a.exit_code, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  const auto out = nlohmann::json::parse(a.out);
  const auto ids = out["output_ids"].get<std::vector<int>>();
  ASSERT_FALSE(ids.empty());
  if (out["finish_reason"] == "stop") {
    EXPECT_EQ(ids.back(), 2);  // </s>
  } else {
    EXPECT_EQ(ids.size(), 200u);
  }
  for (size_t i = 0; i + 1 < ids.size(); ++i) EXPECT_NE(ids[i], 2) << "generated past EOS";
}

TEST(SglGenerate, BadArgumentsExitTwoWithUsage) {
  for (const std::string args :
       {"", "--model-path x", "--model-path x --prompt a --prompt-ids 1",
        "--model-path x --prompt a --max-new-tokens abc", "--model-path x --bogus-flag 1",
        "--model-path x --prompt-ids 1,,2"}) {
    const RunResult r = run_generate(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("usage:"), std::string::npos) << args;
  }
}

TEST(SglGenerate, ContextOverflowAndBadIdsAreClearErrors) {
  RunResult r = run_generate("--model-path " + stories() + " --prompt-ids 1,2,999 --json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("token id 999 is outside the vocabulary"), std::string::npos) << r.out;
  std::string long_prompt = "1";
  for (int i = 0; i < 600; ++i) long_prompt += ",5";
  r = run_generate("--model-path " + stories() + " --prompt-ids " + long_prompt);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("the prompt has 601 tokens; the context length is 512"), std::string::npos)
      << r.out;
  // max_new_tokens past the context is clamped to it, as SGLang does.
  r = run_generate("--model-path " + stories() +
                   " --prompt hi --max-new-tokens 100000 "
                   "--ignore-eos --temperature 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["prompt_ids"].size() + out["output_ids"].size(), 512u);
  EXPECT_EQ(out["finish_reason"], "length");
}

TEST(SglGenerate, BatchFileAnswersInInputOrderWithStops) {
  model::test_util::TempDir dir;
  const auto golden = test::golden("stories260K")["cases"];
  std::string lines;
  for (int i = 0; i < 6; ++i) {
    nlohmann::json j = {{"prompt", golden[i]["prompt"]},
                        {"max_new_tokens", 48},
                        {"temperature", 0},
                        {"ignore_eos", true}};
    lines += j.dump() + "\n";
  }
  lines += R"({"prompt_ids": [1, 403, 407, 261, 378], "max_new_tokens": 48, "temperature": 0,)"
           R"( "ignore_eos": true, "stop": ["Lily"]})"
           "\n";
  lines += R"({"prompt": "Once upon a time", "max_new_tokens": 48, "temperature": 0,)"
           R"( "stop_token_ids": [432]})"
           "\n";
  const auto path = dir.write("batch.jsonl", lines);
  const RunResult r = run_generate("--model-path " + stories() + " --batch-file " + path.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::vector<nlohmann::json> outs;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) outs.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(outs.size(), 8u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(outs[i]["prompt_ids"], golden[i]["prompt_ids"]) << i;
    EXPECT_EQ(outs[i]["output_ids"], golden[i]["greedy_ids"]) << i;
    EXPECT_EQ(outs[i]["text"], golden[i]["greedy_text"]) << i;
    EXPECT_EQ(outs[i]["finish_reason"], "length");
  }
  // Stop string: the text ends right before it.
  EXPECT_EQ(outs[6]["finish_reason"], "stop");
  EXPECT_EQ(outs[6]["text"], ", there was a little girl named ");
  // Stop token: generation ends with it.
  EXPECT_EQ(outs[7]["finish_reason"], "stop");
  EXPECT_EQ(outs[7]["output_ids"], nlohmann::json::array({432}));
}

TEST(SglGenerate, BadBatchFilesNameTheLine) {
  model::test_util::TempDir dir;
  const auto bad = dir.write("bad.jsonl", "{\"prompt\": \"a\"}\n{not json}\n");
  RunResult r = run_generate("--model-path " + stories() + " --batch-file " + bad.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("bad.jsonl:2: invalid JSON"), std::string::npos) << r.out;
  const auto unknown = dir.write("unknown.jsonl", "{\"prompt\": \"a\", \"temprature\": 1}\n");
  r = run_generate("--model-path " + stories() + " --batch-file " + unknown.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("unknown field 'temprature'"), std::string::npos) << r.out;
  const auto type = dir.write("type.jsonl", "{\"prompt\": \"a\", \"max_new_tokens\": \"x\"}\n");
  r = run_generate("--model-path " + stories() + " --batch-file " + type.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("type.jsonl:1"), std::string::npos) << r.out;
}

// Copies stories260K's small files into a scratch dir and lets a test break one.
class BrokenModel : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* f :
         {"config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors"}) {
      std::filesystem::copy_file(std::filesystem::path(stories()) / f, dir_.path() / f);
    }
  }
  RunResult generate() {
    return run_generate("--model-path " + dir_.path().string() + " --prompt hi --max-new-tokens 4");
  }
  void expect_error(const std::vector<std::string>& needles) {
    const RunResult r = generate();
    EXPECT_EQ(r.exit_code, 1) << r.out;
    for (const auto& n : needles) EXPECT_NE(r.out.find(n), std::string::npos) << n << "\n" << r.out;
  }
  model::test_util::TempDir dir_;
};

TEST_F(BrokenModel, Intact) { EXPECT_EQ(generate().exit_code, 0); }

TEST_F(BrokenModel, MissingWeights) {
  std::filesystem::remove(dir_.path() / "model.safetensors");
  expect_error({"NotFound", dir_.path().string()});
}

TEST_F(BrokenModel, CorruptHeader) {
  std::fstream f(dir_.path() / "model.safetensors",
                 std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(10);
  f.write("\x01\x02garbage", 9);
  f.close();
  expect_error({"model.safetensors"});
}

TEST_F(BrokenModel, TruncatedFile) {
  const std::string weights = (dir_.path() / "model.safetensors").string();
  std::filesystem::resize_file(weights, 5000);
  expect_error({"DataLoss", "truncated safetensors file " + weights, "file has 5000"});
  std::filesystem::resize_file(weights, 50);  // inside the header
  expect_error({"truncated safetensors file " + weights, "header says at least", "file has 50"});
}

// A bad --model-path is reported as what it is; each of these used to read as a missing
// tokenizer (or a missing config.json inside a FIFO or a device).
TEST(SglGenerate, BadModelPathsSayWhatIsWrong) {
  model::test_util::TempDir dir;
  const std::string fifo = (dir.path() / "fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string gguf_dir = (dir.path() / "model.gguf").string();
  std::filesystem::create_directories(gguf_dir);
  const std::string no_config = (dir.path() / "no_config").string();
  std::filesystem::create_directories(no_config);
  std::filesystem::copy_file(std::filesystem::path(stories()) / "tokenizer.json",
                             std::filesystem::path(no_config) / "tokenizer.json");
  const std::string absent = (dir.path() / "absent").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {absent, "no such file or directory: " + absent},
      {fifo, "not a regular file: " + fifo},
      {"/dev/zero", "not a regular file: /dev/zero"},
      {gguf_dir, "not a regular file: " + gguf_dir},
      {no_config, no_config + ": not a model directory: it has no config.json"},
  };
  for (const auto& [path, message] : cases) {
    const RunResult r = run_generate("--model-path " + path + " --prompt hi --max-new-tokens 4");
    EXPECT_EQ(r.exit_code, 1) << path << "\n" << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << message << "\n" << r.out;
    EXPECT_EQ(r.out.find("tokenizer"), std::string::npos) << r.out;
  }
}

// A GGUF cut inside its header or its data (no tokenizer in it, so the prompt is ids).
TEST(SglGenerate, TruncatedGgufSaysTruncated) {
  model::test_util::TempDir dir;
  model::test_util::GgufWriter w;
  w.kv("general.architecture", model::test_util::gguf_string("llama"))
      .kv("llama.context_length", model::test_util::gguf_u32(64))
      .kv("llama.embedding_length", model::test_util::gguf_u32(32))
      .kv("llama.block_count", model::test_util::gguf_u32(1))
      .kv("llama.feed_forward_length", model::test_util::gguf_u32(32))
      .kv("llama.attention.head_count", model::test_util::gguf_u32(2))
      .kv("llama.attention.layer_norm_rms_epsilon", model::test_util::gguf_f32(1e-5f))
      .tensor("token_embd.weight", {32, 16}, 0, std::string(32 * 16 * 4, '\0'));
  const std::string bytes = w.bytes();
  for (const size_t keep : {size_t{100}, bytes.size() - 64}) {
    const std::string path = dir.write("cut.gguf", bytes.substr(0, keep)).string();
    const RunResult r =
        run_generate("--model-path " + path + " --prompt-ids 1,2 --max-new-tokens 2");
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.out.find("truncated GGUF file " + path), std::string::npos) << keep << "\n"
                                                                            << r.out;
  }
}

TEST_F(BrokenModel, WrongShapeNamesTensorAndShapes) {
  auto config = test::read_json(dir_.path() / "config.json");
  config["intermediate_size"] = 100;
  dir_.write("config.json", config.dump());
  expect_error({"model.layers.0.mlp.gate_proj.weight", "[172, 64]", "[100, 64]"});
}

TEST_F(BrokenModel, MissingTensor) {
  auto config = test::read_json(dir_.path() / "config.json");
  config["num_hidden_layers"] = 6;
  dir_.write("config.json", config.dump());
  expect_error({"model.layers.5.", "missing"});
}

TEST_F(BrokenModel, UnknownArchitecture) {
  auto config = test::read_json(dir_.path() / "config.json");
  config["architectures"] = {"FancyNewForCausalLM"};
  dir_.write("config.json", config.dump());
  expect_error({"Unimplemented", "FancyNewForCausalLM", "LlamaForCausalLM"});
}

TEST_F(BrokenModel, MissingConfig) {
  std::filesystem::remove(dir_.path() / "config.json");
  expect_error({"config.json"});
}

}  // namespace
}  // namespace sgl
