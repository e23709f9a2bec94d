// The chat template check at start: every real template in testdata passes; one that raises on
// a bare user message, or exceeds a limit, fails with the reason.
#include "server/chat_template_loader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../model/gguf_test_util.h"
#include "test_data.h"

namespace sgl::server {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::unique_ptr<WorkPool> pool() {
  auto started = WorkPool::start({});
  EXPECT_TRUE(started.ok());
  return std::move(started).value();
}

Status check(const std::string& source, WorkPool& p) {
  auto parsed = tokenizer::ChatTemplate::parse(source);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return check_chat_template(*parsed, "<s>", "</s>", p);
}

TEST(CheckChatTemplate, EveryTestdataTemplatePasses) {
  auto p = pool();
  int count = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(sgl::test::testdata_dir() / "chat_templates")) {
    if (entry.path().extension() != ".jinja") continue;
    ++count;
    Status s = check(read_file(entry.path()), *p);
    EXPECT_TRUE(s.ok()) << entry.path().filename() << ": " << s.message();
  }
  EXPECT_GE(count, 70);
}

TEST(CheckChatTemplate, ARaisingTemplateFails) {
  auto p = pool();
  Status s = check("{{ raise_exception('no chat here') }}", *p);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "no chat here");
}

TEST(CheckChatTemplate, QuadraticStringBuildingFailsOnTheWorkLimit) {
  auto p = pool();
  // 4 KiB appended per step: the work limit comes after ~700 steps (0.5 s in a release build);
  // under ThreadSanitizer, whose memcpy is far slower, the check's 5 s deadline may come first.
  Status s = check(
      "{% set ns = namespace(s='') %}{% set chunk = 'x' * 4096 %}{% for i in range(100000) %}"
      "{% set ns.s = ns.s + chunk %}{% endfor %}{{ ns.s }}",
      *p);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.message().find("work limit") != std::string::npos ||
              s.message().find("deadline exceeded") != std::string::npos)
      << s.message();
}

TEST(CheckChatTemplate, ATemplateWantingToolsOnlyWarns) {
  auto p = pool();
  EXPECT_TRUE(
      check("{% for t in tools %}{{ t.name }}{% endfor %}{{ messages[0].content }}", *p).ok());
}

TEST(LoadChatTemplate, AnExplicitBrokenTemplateIsAnErrorNamingIt) {
  auto p = pool();
  const auto path = std::filesystem::temp_directory_path() / "sgl_broken_chat_template.jinja";
  std::ofstream(path) << "{{ raise_exception('broken on purpose') }}";
  auto tokenizer = tokenizer::Tokenizer::from_dir(sgl::test::model_dir("stories260K").string());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  auto loaded = load_chat_template(path.string(), "m", **tokenizer, *p);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find(path.string()), std::string::npos);
  EXPECT_NE(loaded.status().message().find("broken on purpose"), std::string::npos);
  std::filesystem::remove(path);
}

// --chat-template FILE: a .json file's "chat_template" string is the template; SGLang's JSON
// conversation templates, empty files and what is not a regular file are errors naming the path.
TEST(LoadChatTemplate, ExplicitFilesAreReadOrRefusedByName) {
  auto p = pool();
  auto tokenizer = tokenizer::Tokenizer::from_dir(sgl::test::model_dir("stories260K").string());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  const auto dir = std::filesystem::temp_directory_path() /
                   ("sgl_chat_template_files-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto load = [&](const std::string& name, const std::string& content) {
    std::ofstream(dir / name) << content;
    return load_chat_template((dir / name).string(), "m", **tokenizer, *p);
  };
  auto hf = load("chat_template.json", R"({"chat_template": "{{ messages[0].content }}"})");
  ASSERT_TRUE(hf.ok()) << hf.status().to_string();
  ASSERT_TRUE(hf->chat_template.has_value());
  EXPECT_EQ(hf->chat_template->source(), "{{ messages[0].content }}");
  for (const auto& [name, content] : std::vector<std::pair<std::string, std::string>>{
           {"sglang.json", R"({"name": "chatml", "system": "<|im_start|>system\n"})"},
           {"broken.json", "{"},
           {"empty.jinja", " \n"}}) {
    auto refused = load(name, content);
    ASSERT_FALSE(refused.ok()) << name;
    EXPECT_NE(refused.status().message().find((dir / name).string()), std::string::npos)
        << refused.status().to_string();
  }
  auto directory = load_chat_template(dir.string(), "m", **tokenizer, *p);
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.status().message().find(dir.string()), std::string::npos);
  std::filesystem::remove_all(dir);
}

// --hf-chat-template-name: one of tokenizer_config.json's named templates, by name.
TEST(LoadChatTemplate, HfChatTemplateNamePicksANamedTemplate) {
  auto p = pool();
  const auto dir = std::filesystem::temp_directory_path() /
                   ("sgl_named_templates-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(sgl::test::model_dir("stories260K") / "tokenizer.json",
                             dir / "tokenizer.json",
                             std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir / "tokenizer_config.json") << R"({"chat_template": [
      {"name": "default", "template": "D{{ messages[0].content }}"},
      {"name": "tool_use", "template": "T{{ messages[0].content }}"}]})";
  auto tokenizer = tokenizer::Tokenizer::from_dir(dir);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  auto unnamed = load_chat_template("", dir.string(), **tokenizer, *p);
  ASSERT_TRUE(unnamed.ok() && unnamed->chat_template.has_value());
  EXPECT_EQ(unnamed->chat_template->source(), "D{{ messages[0].content }}");
  auto named = load_chat_template("", dir.string(), **tokenizer, *p, "tool_use");
  ASSERT_TRUE(named.ok()) << named.status().to_string();
  ASSERT_TRUE(named->chat_template.has_value());
  EXPECT_EQ(named->chat_template->source(), "T{{ messages[0].content }}");
  auto missing = load_chat_template("", dir.string(), **tokenizer, *p, "rag");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("available templates: default, tool_use"),
            std::string::npos)
      << missing.status().message();
  std::filesystem::remove_all(dir);
  // A tokenizer with one template names none.
  auto stories = tokenizer::Tokenizer::from_dir(sgl::test::model_dir("stories260K").string());
  auto none = load_chat_template("", sgl::test::model_dir("stories260K").string(), **stories, *p,
                                 "default");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("it names no templates"), std::string::npos);
}

// A GGUF file carries its chat template in its metadata (tokenizer.chat_template): the same
// start check and render limits apply to it as to a tokenizer_config.json's.
std::filesystem::path write_gguf_with_template(const std::string& name,
                                               const std::string& chat_template) {
  namespace tu = model::test_util;
  tu::GgufWriter w;
  w.kv("tokenizer.ggml.model", tu::gguf_string("gpt2"));
  w.kv("tokenizer.ggml.pre", tu::gguf_string("default"));
  w.kv("tokenizer.ggml.tokens", tu::gguf_string_array({"<s>", "</s>", "a", "b", "ab"}));
  w.kv("tokenizer.ggml.merges", tu::gguf_string_array({"a b"}));
  w.kv("tokenizer.ggml.bos_token_id", tu::gguf_u32(0));
  w.kv("tokenizer.ggml.eos_token_id", tu::gguf_u32(1));
  w.kv("tokenizer.chat_template", tu::gguf_string(chat_template));
  const auto path =
      std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".gguf");
  std::ofstream(path, std::ios::binary) << w.bytes();
  return path;
}

TEST(LoadChatTemplate, GgufTemplatesGetTheSameChecksAndLimits) {
  auto p = pool();
  const auto broken = write_gguf_with_template("broken", "{{ raise_exception('from gguf') }}");
  auto tok = tokenizer::Tokenizer::from_dir(broken);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  auto loaded = load_chat_template("", broken.string(), **tok, *p);
  std::filesystem::remove(broken);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_FALSE(loaded->chat_template.has_value());  // disabled with a warning, not served

  // Passes the start check, then builds a quadratic string for any other message.
  const auto quadratic = write_gguf_with_template(
      "quadratic",
      "{% if messages[0].content != 'Hello' %}{% set ns = namespace(s='') %}"
      "{% for i in range(100000) %}{% set ns.s = ns.s + ('x' * 4096) %}"
      "{% endfor %}{{ ns.s }}{% endif %}{{ messages[0].content }}");
  tok = tokenizer::Tokenizer::from_dir(quadratic);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  loaded = load_chat_template("", quadratic.string(), **tok, *p);
  std::filesystem::remove(quadratic);
  ASSERT_TRUE(loaded.ok() && loaded->chat_template.has_value());
  auto rendered = tokenizer::apply_chat_template(loaded->chat_template->source(),
                                                 R"([{"role": "user", "content": "hi"}])", "", true,
                                                 "<s>", "</s>");
  ASSERT_FALSE(rendered.ok());
  EXPECT_NE(rendered.status().message().find("work limit"), std::string::npos)
      << rendered.status().message();
}

}  // namespace
}  // namespace sgl::server
