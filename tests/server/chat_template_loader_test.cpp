// The chat template check at start: every real template in testdata passes; one that raises on
// a bare user message, or exceeds a limit, fails with the reason.
#include "server/chat_template_loader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

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
       std::filesystem::directory_iterator(std::string(SGL_TESTDATA_DIR) + "/chat_templates")) {
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
  Status s = check(
      "{% set ns = namespace(s='') %}{% for i in range(100000) %}"
      "{% set ns.s = ns.s + 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' %}{% endfor %}{{ ns.s }}",
      *p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("work limit"), std::string::npos) << s.message();
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
  auto tokenizer =
      tokenizer::Tokenizer::from_dir(std::string(SGL_TESTDATA_DIR) + "/models/stories260K");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  auto loaded = load_chat_template(path.string(), "m", **tokenizer, *p);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find(path.string()), std::string::npos);
  EXPECT_NE(loaded.status().message().find("broken on purpose"), std::string::npos);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace sgl::server
