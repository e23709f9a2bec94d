// Completion templates: the built-in markers in both orders, JSON files and their errors.
#include "server/completion_template.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace sgl::server {
namespace {

TEST(CompletionTemplate, BuiltInsPutTheMarkersInTheirOrder) {
  auto qwen = load_completion_template("qwen_coder");
  ASSERT_TRUE(qwen.ok());
  EXPECT_EQ(fill_in_the_middle(*qwen, "def f(", "):\n"),
            "<|fim_prefix|>def f(<|fim_suffix|>):\n<|fim_middle|>");
  auto star = load_completion_template("star_coder");
  ASSERT_TRUE(star.ok());
  EXPECT_EQ(fill_in_the_middle(*star, "a", "b"), "<fim_prefix>a<fim_suffix>b<fim_middle>");
  auto deepseek = load_completion_template("deepseek_coder");
  ASSERT_TRUE(deepseek.ok());
  EXPECT_EQ(fill_in_the_middle(*deepseek, "a", "b"),
            "<｜fim▁begin｜>a<｜fim▁hole｜>b<｜fim▁end｜>");
}

TEST(CompletionTemplate, JsonFiles) {
  const auto dir = std::filesystem::temp_directory_path() / "sgl_completion_template_test";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  auto t = load_completion_template(
      write("mine.json",
            R"({"name": "mine", "fim_begin_token": "<B>", "fim_middle_token": "<M>",
          "fim_end_token": "<E>", "fim_position": "MIDDLE"})"));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->name, "mine");
  EXPECT_EQ(fill_in_the_middle(*t, "p", "s"), "<B>p<M>s<E>");
  const auto refused = [&](const std::string& path, const std::string& words) {
    auto r = load_completion_template(path);
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_NE(r.status().message().find(words), std::string::npos) << r.status().message();
  };
  refused("no_such_template", "not a built-in template name");
  refused(write("t.txt", "{}"), "unrecognized format");
  refused(write("bad.json", "[1]"), "not a JSON object");
  refused(write("missing.json", R"({"name": "x", "fim_begin_token": "<B>"})"),
          "'fim_middle_token' must be a string");
  refused(write("position.json", R"({"name": "x", "fim_begin_token": "<B>",
      "fim_middle_token": "<M>", "fim_end_token": "<E>", "fim_position": "START"})"),
          "Unknown fim position");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sgl::server
