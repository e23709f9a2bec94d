// sgl-tokenize end to end: encode (also from a file), decode, chat rendering, and errors.
#include <gtest/gtest.h>

#include <sstream>

#include "model/model_test_util.h"
#include "run_command.h"
#include "test_data.h"

namespace sgl {
namespace {

using test::RunResult;

RunResult run_tokenize(const std::string& args) {
  return test::run_tool("src/app/sgl-tokenize", args);
}

std::string qwen3() { return (test::testdata_dir() / "tokenizers" / "qwen3").string(); }

TEST(SglTokenize, EncodesDecodesAndReadsTextFiles) {
  RunResult r = run_tokenize("--tokenizer " + qwen3() + " --text 'Hello world' --no-special");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ids"], nlohmann::json::array({9707, 1879}));
  EXPECT_EQ(j["tokens"], nlohmann::json::array({"Hello", "Ġworld"}));
  r = run_tokenize("--tokenizer " + qwen3() + " --decode 9707,1879");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["text"], "Hello world");

  model::test_util::TempDir dir;
  const auto file = dir.write("lines.jsonl", "\"a b\"\n\"\\u00e9t\\u00e9\"\n");
  r = run_tokenize("--tokenizer " + qwen3() + " --text-file " + file.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream lines(r.out);
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    EXPECT_TRUE(nlohmann::json::parse(line).contains("ids"));
  }
  EXPECT_EQ(count, 2);
}

TEST(SglTokenize, RendersChatsWithTheTokenizersTemplateOrAGivenOne) {
  model::test_util::TempDir dir;
  const auto chat = dir.write("chat.json", R"([{"role": "user", "content": "Hi"}])");
  RunResult r = run_tokenize("--tokenizer " + qwen3() + " --chat " + chat.string() +
                             " --add-generation-prompt");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["text"], "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(j["ids"][0], 151644);

  const auto tmpl = dir.write("t.jinja", "{% for m in messages %}[{{ m.content }}]{% endfor %}");
  r = run_tokenize("--tokenizer " + qwen3() + " --chat " + chat.string() + " --template " +
                   tmpl.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["text"], "[Hi]");

  const auto raising = dir.write("r.jinja", "{{ raise_exception('no system role, sorry') }}");
  r = run_tokenize("--tokenizer " + qwen3() + " --chat " + chat.string() + " --template " +
                   raising.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("no system role, sorry"), std::string::npos) << r.out;
}

TEST(SglTokenize, BadInvocationsFailCleanly) {
  EXPECT_EQ(run_tokenize("").exit_code, 2);
  EXPECT_EQ(run_tokenize("--tokenizer " + qwen3()).exit_code, 2);  // no mode
  EXPECT_EQ(run_tokenize("--tokenizer " + qwen3() + " --text a --decode 1").exit_code, 2);
  RunResult r = run_tokenize("--tokenizer /nonexistent --text a");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("/nonexistent"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sgl
