// Flag tables: CliArgs with aliases and multi-value flags, the support check (refusals, accepted
// values, notes), --help wrapping, and --config YAML files.
#include "app/flag_spec.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "app/config_file.h"

namespace sgl::app {
namespace {

const std::vector<FlagSpec>& table() {
  static const std::vector<FlagSpec> t = {
      {.name = "--model-path", .aliases = {"--model"}, .value = "PATH", .help = "The model."},
      {.name = "--tp-size",
       .aliases = {"--tp"},
       .value = "N",
       .help = "GPUs.",
       .support = FlagSupport::kRefused,
       .note = "one GPU",
       .accepted_values = {"1"}},
      {.name = "--enable-metrics",
       .help = "Metrics.",
       .support = FlagSupport::kNoEffect,
       .note = "always on"},
      {.name = "--cuda-graph-bs", .value = "N...", .help = "Sizes.", .default_value = "all"},
  };
  return t;
}

Result<CliArgs> parse(std::vector<std::string> args) {
  return CliArgs::parse(args, flag_sets({table()}));
}

TEST(FlagSpecTest, AliasesInlineValuesAndMultipleValues) {
  Result<CliArgs> a = parse({"--model=m", "--tp", "1", "--cuda-graph-bs", "1", "2", "4",
                             "--enable-metrics", "--model-path", "last"});
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->get("--model-path"), "last");  // the last of a flag given twice wins
  EXPECT_EQ(a->get("--tp-size"), "1");
  EXPECT_EQ(a->get("--cuda-graph-bs"), "1 2 4");
  EXPECT_EQ(a->get_int_list("--cuda-graph-bs").value(), (std::vector<int32_t>{1, 2, 4}));
  EXPECT_TRUE(a->has("--enable-metrics"));
  EXPECT_FALSE(parse({"--tp"}).ok());
  EXPECT_FALSE(parse({"--enable-metrics=1"}).ok());
  EXPECT_FALSE(parse({"--model-path", "m", "stray"}).ok());
  Result<CliArgs> unknown = parse({"--nope"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown flag '--nope'"), std::string::npos);
}

// A value flag followed by another flag has no value (argparse): the next flag is not taken as
// it, so an empty shell variable cannot turn `--x` into a value and drop it.
TEST(FlagSpecTest, AFlagIsNeverTakenAsTheValueBeforeIt) {
  Result<CliArgs> swallowed = parse({"--model-path", "--enable-metrics"});
  ASSERT_FALSE(swallowed.ok());
  EXPECT_EQ(swallowed.status().message(),
            "--model-path needs a value, got the flag --enable-metrics");
  Result<CliArgs> inline_dashes = parse({"--model-path=--odd", "--cuda-graph-bs", "-1", "2"});
  ASSERT_TRUE(inline_dashes.ok()) << inline_dashes.status().to_string();
  EXPECT_EQ(inline_dashes->get("--model-path"), "--odd");
  EXPECT_EQ(inline_dashes->get("--cuda-graph-bs"), "-1 2");  // negative numbers are values
  EXPECT_FALSE(parse({"--cuda-graph-bs", "--enable-metrics"}).ok());
}

// As argparse: a flag may be abbreviated to any prefix that names one flag (aliases count as
// the flag they name); a prefix of several is an error listing them.
TEST(FlagSpecTest, AbbreviationsNameTheOneFlagTheyBegin) {
  Result<CliArgs> a = parse({"--model-p", "m", "--enable-m", "--cuda=1"});
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->get("--model-path"), "m");
  EXPECT_TRUE(a->has("--enable-metrics"));
  EXPECT_EQ(a->get("--cuda-graph-bs"), "1");
  Result<CliArgs> t = parse({"--t", "1"});  // --tp-size and its alias --tp: one flag
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->get("--tp-size"), "1");
  const FlagSets two{{"--max-total-tokens", "--max-prefill-tokens"}, {}, {}, {}};
  Result<CliArgs> ambiguous = CliArgs::parse({"--max-", "1"}, two);
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_EQ(ambiguous.status().message(),
            "ambiguous flag '--max-': it could be any of --max-prefill-tokens --max-total-tokens");
  Result<CliArgs> one = CliArgs::parse({"--max-t", "1"}, two);
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  EXPECT_EQ(one->get("--max-total-tokens"), "1");
}

TEST(FlagSpecTest, RefusalsNamesTheFlagUnlessTheValueAsksForNothing) {
  std::vector<std::string> notes;
  EXPECT_TRUE(check_flag_support(*parse({"--tp", "1"}), {table()}, notes).ok());
  EXPECT_TRUE(notes.empty());
  const Status refused = check_flag_support(*parse({"--tp", "2"}), {table()}, notes);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message(), "--tp-size 2 is not supported: one GPU");
  EXPECT_TRUE(check_flag_support(*parse({"--enable-metrics"}), {table()}, notes).ok());
  EXPECT_EQ(notes, (std::vector<std::string>{"--enable-metrics has no effect: always on"}));
}

TEST(FlagSpecTest, HelpHasEveryNameValueDefaultAndNoteWithin100Columns) {
  const std::string help = format_flag_help("flags", table());
  for (const char* piece :
       {"flags:\n", "  --model-path, --model PATH\n", "  --tp-size, --tp N\n",
        "Refused unless 1: one GPU", "No effect: always on", "[default: all]"}) {
    EXPECT_NE(help.find(piece), std::string::npos) << piece << "\n" << help;
  }
  const std::vector<FlagSpec> wide = {
      {.name = "--x",
       .help = std::string_view("word word word word word word word word word word "
                                "word word word word word word word word word word "
                                "word word word word word word word word word.")}};
  const std::string wrapped = format_flag_help("t", wide);
  size_t lines = 0, start = 0;
  for (size_t end; (end = wrapped.find('\n', start)) != std::string::npos; start = end + 1) {
    EXPECT_LE(end - start, 100u);
    ++lines;
  }
  EXPECT_EQ(lines, 4u);  // title, flag, two lines of help
}

TEST(ConfigFileTest, KeysInAnySpellingBecomeArguments) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("sgl_config_file_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "config.yaml";
  std::ofstream(path) << "model_path: /m\n--tp: 1\nenable-metrics: true\ncuda-graph-bs: 8\n"
                         "# a comment\n";
  Result<std::vector<std::string>> args = config_file_args(path, flag_sets({table()}));
  ASSERT_TRUE(args.ok()) << args.status().to_string();
  EXPECT_EQ(*args, (std::vector<std::string>{"--model-path=/m", "--tp-size=1", "--enable-metrics",
                                             "--cuda-graph-bs=8"}));
  EXPECT_EQ(find_config_path({"--a", "--config", "x.yaml"}), "x.yaml");
  EXPECT_EQ(find_config_path({"--config=y.yaml"}), "y.yaml");
  EXPECT_FALSE(find_config_path({"--model", "m"}));
  std::ofstream(path) << "tp: [1, 2]\n";
  EXPECT_FALSE(config_file_args(path, flag_sets({table()})).ok());  // one value, not a list
  // As SGLang: a mapping is its flag's JSON value, a list a multi-value flag's values.
  std::ofstream(path) << "model-path: {temperature: 0.6, top_k: 20, name: 'x', on: true, "
                         "quoted: '1', none: ~, list: [1, a]}\ncuda-graph-bs: [1, 2, 4]\n";
  args = config_file_args(path, flag_sets({table()}));
  ASSERT_TRUE(args.ok()) << args.status().to_string();
  EXPECT_EQ(*args, (std::vector<std::string>{
                       "--model-path={\"list\":[1,\"a\"],\"name\":\"x\",\"none\":null,"
                       "\"on\":true,\"quoted\":\"1\",\"temperature\":0.6,\"top_k\":20}",
                       "--cuda-graph-bs=1 2 4"}));
  Result<CliArgs> parsed = CliArgs::parse(*args, flag_sets({table()}));
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->get("--cuda-graph-bs"), "1 2 4");
  EXPECT_EQ(config_file_args(dir / "absent.yaml", flag_sets({table()})).status().code(),
            StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sgl::app
