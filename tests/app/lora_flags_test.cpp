// --lora-paths' three spellings (SGLang's LoRAPathAction) and their refusals; the LoRA flags
// without LoRA are noted, not silently ignored.
#include "app/lora_flags.h"

#include <gtest/gtest.h>

#include "app/engine_flags.h"

namespace sgl::app {
namespace {

TEST(LoraPaths, ReadsNamePathPathAndJson) {
  auto paths = parse_lora_paths(
      R"(a=/x/a /y/b {"lora_name": "c d", "lora_path": "/z/c", "pinned": true} e=/w/e=1)");
  ASSERT_TRUE(paths.ok()) << paths.status().to_string();
  ASSERT_EQ(paths->size(), 4u);
  EXPECT_EQ((*paths)[0].name, "a");
  EXPECT_EQ((*paths)[0].path, "/x/a");
  EXPECT_EQ((*paths)[1].name, "/y/b");
  EXPECT_EQ((*paths)[1].path, "/y/b");
  EXPECT_EQ((*paths)[2].name, "c d");
  EXPECT_EQ((*paths)[2].path, "/z/c");
  EXPECT_EQ((*paths)[3].name, "e");
  EXPECT_EQ((*paths)[3].path, "/w/e=1");
}

TEST(LoraPaths, RefusesBadEntries) {
  const std::pair<const char*, const char*> cases[] = {
      {"a=/x a=/y", "given twice"},
      {"=/x", "needs a name and a path"},
      {"a=", "needs a name and a path"},
      {R"({"lora_name": "a"})", "needs string lora_name and lora_path"},
      {R"({"lora_name": "a", "lora_path": "/x", "rank": 4})", "unknown field 'rank'"},
      {R"({"lora_name": "a", "lora_path": "/x", "pinned": "yes"})", "pinned must be a boolean"},
      {R"({"lora_name": )", "is not a JSON object"},
      {"", "at least one adapter"},
  };
  for (const auto& [text, words] : cases) {
    auto paths = parse_lora_paths(text);
    ASSERT_FALSE(paths.ok()) << text;
    EXPECT_NE(paths.status().message().find(words), std::string::npos)
        << text << ": " << paths.status().message();
  }
}

TEST(LoraFlags, WithoutLoraTheyAreNotedAndLoraIsOff) {
  auto cli = CliArgs::parse({"--max-loras-per-batch", "2", "--max-lora-rank", "8"},
                            flag_sets({engine_flag_table()}));
  ASSERT_TRUE(cli.ok()) << cli.status().to_string();
  auto setup = parse_engine_flags(*cli);
  ASSERT_TRUE(setup.ok()) << setup.status().to_string();
  EXPECT_FALSE(setup->runner.enable_lora);
  EXPECT_EQ(setup->engine.scheduler.max_loras_per_batch, 0);
  int noted = 0;
  for (const std::string& note : setup->notes) {
    noted += note.find("has no effect without --enable-lora") != std::string::npos;
  }
  EXPECT_EQ(noted, 2);
  // --enable-lora alone: LoRA on, no adapter, SGLang's default bound.
  auto on = CliArgs::parse({"--enable-lora"}, flag_sets({engine_flag_table()}));
  ASSERT_TRUE(on.ok());
  auto enabled = parse_engine_flags(*on);
  ASSERT_TRUE(enabled.ok()) << enabled.status().to_string();
  EXPECT_TRUE(enabled->runner.enable_lora);
  EXPECT_TRUE(enabled->runner.lora_paths.empty());
  EXPECT_EQ(enabled->engine.scheduler.max_loras_per_batch, 8);
}

}  // namespace
}  // namespace sgl::app
