// --log-requests' lines: SGLang's cut of long strings and lists (code points, both ends kept),
// what each level keeps of a request and of its output, the text and JSON lines, the API body
// line, the settings' checks and /configure_logging's all-or-nothing change, and the targets
// (stdout and directories: one file each, the lines appended with a time prefix).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "server/request_log_json.h"
#include "server/request_logger.h"

namespace sgl::server {
namespace {

using request_log::json;

TEST(RequestLogCut, LongStringsKeepBothEndsByCodePoint) {
  EXPECT_EQ(request_log::truncated("abcdef", 6), "abcdef");
  EXPECT_EQ(request_log::truncated("abcdefg", 6), "abc...efg");
  EXPECT_EQ(request_log::truncated("abcdefgh", 5), "ab...gh");
  // "é" and "日" are one character each, never split.
  EXPECT_EQ(request_log::truncated("\xc3\xa9\xc3\xa9\xc3\xa9xy\xe6\x97\xa5\xe6\x97\xa5", 4),
            "\xc3\xa9\xc3\xa9...\xe6\x97\xa5\xe6\x97\xa5");
  EXPECT_EQ(request_log::truncated("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 4),
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
}

TEST(RequestLogCut, LongListsKeepBothHalvesAroundAMarker) {
  EXPECT_EQ(request_log::truncated(json({1, 2, 3, 4}), 4), json({1, 2, 3, 4}));
  EXPECT_EQ(request_log::truncated(json({1, 2, 3, 4, 5}), 4), json({1, 2, "...", 4, 5}));
  EXPECT_EQ(request_log::truncated(json({1, 2, 3, 4, 5, 6, 7}), 3), json({1, "...", 7}));
  EXPECT_EQ(request_log::truncated(json({1, 2}), 1), json({"..."}));
  EXPECT_EQ(request_log::truncated("ab", 1), "...");
  // Nested: an object's strings and lists are cut too, numbers and booleans kept.
  const json nested = {{"text", "abcdefgh"}, {"ids", {1, 2, 3, 4, 5, 6}}, {"n", 7}, {"b", true}};
  const json cut = request_log::truncated(nested, 4);
  EXPECT_EQ(cut["text"], "ab...gh");
  EXPECT_EQ(cut["ids"], json({1, 2, "...", 5, 6}));
  EXPECT_EQ(cut["n"], 7);
  EXPECT_EQ(cut["b"], true);
}

json sample_request(size_t prompt_length) {
  return {{"text", std::string(prompt_length, 'p')},
          {"input_ids", json(std::vector<int>(prompt_length, 7))},
          {"prompt_tokens", prompt_length},
          {"sampling_params", {{"temperature", 0.5}}},
          {"lora_path", "adapter"}};
}

TEST(RequestLogLevels, WhatEachLevelKeepsOfARequest) {
  const json r = sample_request(3000);
  const json l0 = request_log::request_fields(r, 0);
  EXPECT_EQ(l0, json({{"prompt_tokens", 3000}}));
  const json l1 = request_log::request_fields(r, 1);
  EXPECT_EQ(l1, json({{"prompt_tokens", 3000}, {"sampling_params", {{"temperature", 0.5}}}}));
  const json l2 = request_log::request_fields(r, 2);
  EXPECT_EQ(l2["text"].get<std::string>().size(), kRequestLogMaxLength + 3);
  EXPECT_EQ(l2["input_ids"].size(), kRequestLogMaxLength + 1);
  EXPECT_EQ(l2["lora_path"], "adapter");
  EXPECT_EQ(request_log::request_fields(r, 3), r);
}

TEST(RequestLogLevels, WhatEachLevelKeepsOfAnOutput) {
  const json out = {{"text", std::string(5000, 'o')},
                    {"output_ids", json(std::vector<int>(5000, 1))},
                    {"embedding", json(std::vector<float>(5000, 0.5f))}};
  EXPECT_TRUE(request_log::output_fields(out, 0).empty());
  EXPECT_TRUE(request_log::output_fields(out, 1).empty());
  const json l2 = request_log::output_fields(out, 2);
  EXPECT_EQ(l2["text"].get<std::string>().size(), kRequestLogMaxLength + 3);
  EXPECT_EQ(l2["output_ids"].size(), kRequestLogMaxLength + 1);
  EXPECT_EQ(l2["embedding"].size(), kRequestLogMaxLength + 1);
  EXPECT_EQ(request_log::output_fields(out, 3), out);
}

const request_log::FinishedRequest kFinished = {"12", 5, 3, 2, "length", 0.25};

TEST(RequestLogLines, TextLines) {
  RequestLogView view{true, 0, RequestLogFormat::kText};
  EXPECT_EQ(request_log::received_line(view, "12", sample_request(2)),
            "Receive: rid=12 obj={\"prompt_tokens\":2}");
  const json out = {{"text", "hi"}, {"output_ids", {4, 5, 6}}};
  EXPECT_EQ(request_log::finished_line(view, kFinished, out),
            "request rid=12 prompt_tokens=5 completion_tokens=3 cached_tokens=2 "
            "finish_reason=length latency=0.250s");
  view.level = 2;
  EXPECT_EQ(request_log::finished_line(view, kFinished, out),
            "request rid=12 prompt_tokens=5 completion_tokens=3 cached_tokens=2 "
            "finish_reason=length latency=0.250s out={\"text\":\"hi\",\"output_ids\":[4,5,6]}");
  EXPECT_EQ(request_log::api_request_line(view, "/v1/completions", R"({"prompt": "Hi"})"),
            "Receive OpenAI: route=/v1/completions obj={\"prompt\":\"Hi\"}");
  // A body that is not JSON is logged as a string (cut at level 2).
  EXPECT_EQ(request_log::api_request_line(view, "/v1/completions", "{oops"),
            "Receive OpenAI: route=/v1/completions obj=\"{oops\"");
}

TEST(RequestLogLines, JsonLinesAreSGLangEvents) {
  const RequestLogView view{true, 2, RequestLogFormat::kJson};
  const json received = json::parse(request_log::received_line(view, "12", sample_request(2)));
  EXPECT_EQ(received["event"], "request.received");
  EXPECT_TRUE(received["timestamp"].is_string());
  EXPECT_EQ(received["rid"], "12");
  EXPECT_EQ(received["obj"], sample_request(2));
  const json finished = json::parse(
      request_log::finished_line(view, kFinished, {{"text", "hi"}, {"output_ids", {4}}}));
  EXPECT_EQ(finished["event"], "request.finished");
  EXPECT_EQ(finished["out"]["text"], "hi");
  EXPECT_EQ(finished["out"]["meta_info"], json({{"id", "12"},
                                                {"finish_reason", {{"type", "length"}}},
                                                {"prompt_tokens", 5},
                                                {"completion_tokens", 3},
                                                {"cached_tokens", 2},
                                                {"e2e_latency", 0.25}}));
  const json api = json::parse(
      request_log::api_request_line(view, "/v1/chat/completions", R"({"messages": []})"));
  EXPECT_EQ(api["event"], "request.received.openai");
  EXPECT_EQ(api["route"], "/v1/chat/completions");
  EXPECT_EQ(api["obj"], json({{"messages", json::array()}}));
  // Invalid UTF-8 (a decoded text cut mid-character) is replaced, never thrown on.
  const std::string line =
      request_log::finished_line(view, kFinished, {{"text", std::string("a\xe6\x97")}});
  EXPECT_EQ(json::parse(line)["out"]["text"], "a\xef\xbf\xbd");
}

TEST(RequestLogSettingsCheck, LevelsFormatsAndAllOrNothingConfigure) {
  EXPECT_TRUE(check_request_log_level(0, "x").ok());
  EXPECT_TRUE(check_request_log_level(3, "x").ok());
  EXPECT_FALSE(check_request_log_level(4, "--log-requests-level").ok());
  EXPECT_FALSE(check_request_log_level(-1, "x").ok());
  EXPECT_EQ(*parse_request_log_format("json", "x"), RequestLogFormat::kJson);
  const auto bad = parse_request_log_format("yaml", "--log-requests-format");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--log-requests-format"), std::string::npos);

  RequestLogger logger(RequestLogSettings{});
  EXPECT_FALSE(logger.view().enabled);
  EXPECT_EQ(logger.view().level, 2);  // SGLang's default
  // A bad level or format changes nothing, not even the valid settings beside it.
  EXPECT_FALSE(logger.configure(true, 7, std::nullopt).ok());
  EXPECT_FALSE(logger.configure(true, 1, "yaml").ok());
  EXPECT_FALSE(logger.view().enabled);
  EXPECT_EQ(logger.view().level, 2);
  ASSERT_TRUE(logger.configure(true, 0, "json").ok());
  EXPECT_TRUE(logger.view().enabled);
  EXPECT_EQ(logger.view().level, 0);
  EXPECT_EQ(logger.view().format, RequestLogFormat::kJson);
  ASSERT_TRUE(logger.configure(false, std::nullopt, std::nullopt).ok());
  EXPECT_FALSE(logger.view().enabled);
  EXPECT_EQ(logger.view().level, 0);
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(RequestLogTargets, DirectoriesGetOneFileOfStampedLines) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                                    ("request_log_" + std::to_string(::getpid())) / "a" / "b";
  std::filesystem::remove_all(dir.parent_path().parent_path());
  ASSERT_TRUE(prepare_request_log_targets({dir.string()}).ok());  // made, with parents
  ASSERT_TRUE(std::filesystem::is_directory(dir));
  {
    RequestLogger logger(RequestLogSettings{true, 2, RequestLogFormat::kText, {dir.string()}});
    logger.write("first");
    logger.write("second");
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(files[0].filename().string().ends_with("_0.log")) << files[0];
  const std::string text = read_file(files[0]);
  // "[YYYY-MM-DD HH:MM:SS] first\n[...] second\n"
  ASSERT_EQ(text.size(), 2 * (22 + 1) + 5 + 6) << text;
  EXPECT_EQ(text[0], '[');
  EXPECT_EQ(text.substr(20, 8), "] first\n");
  EXPECT_EQ(text.substr(text.size() - 9), "] second\n");
  {  // a second logger appends
    RequestLogger logger(RequestLogSettings{true, 2, RequestLogFormat::kText, {dir.string()}});
    logger.write("third");
  }
  EXPECT_EQ(read_file(files[0]).substr(text.size() + 20), "] third\n");
  std::filesystem::remove_all(dir.parent_path().parent_path());
}

TEST(RequestLogTargets, ADirectoryThatCannotBeMadeStopsTheStart) {
  const std::filesystem::path file = std::filesystem::path(::testing::TempDir()) /
                                     ("request_log_file_" + std::to_string(::getpid()));
  std::ofstream(file) << "x";
  const Status s = prepare_request_log_targets({"stdout", (file / "sub").string()});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--log-requests-target"), std::string::npos) << s.message();
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace sgl::server
