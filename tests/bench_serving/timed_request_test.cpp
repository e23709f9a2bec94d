// TimedRequest and the response decoding: TTFT / ITL / latency from event arrival times for the
// three APIs, and failures (HTTP errors, cut-short streams, error events, aborts).
#include "bench_serving/timed_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sgl::bench_serving {
namespace {

using std::chrono::milliseconds;

class TimedRequestTest : public ::testing::Test {
 protected:
  // Runs one request whose body pieces arrive at the given milliseconds after sending.
  RequestOutput run(ApiKind api, bool stream, int status,
                    const std::vector<std::pair<int, std::string>>& pieces, int finish_ms,
                    Status transport = Status::ok_status()) {
    DatasetRow row;
    row.prompt = "the big day";
    row.prompt_len = 3;
    row.output_len = 4;
    int done_calls = 0;
    TimedRequest request(api, stream, row, [&](TimedRequest&) { ++done_calls; });
    const Clock::time_point origin = Clock::time_point() + std::chrono::seconds(100);
    const Clock::time_point sent = origin + milliseconds(500);
    request.begin(origin, sent);
    request.on_status(status, sent);
    for (const auto& [ms, bytes] : pieces) request.on_body(bytes, sent + milliseconds(ms));
    request.on_finish(transport, sent + milliseconds(finish_ms));
    EXPECT_EQ(done_calls, 1);
    EXPECT_DOUBLE_EQ(request.output().start_s, 0.5);
    return request.output();
  }
};

std::string completion_event(const std::string& text) {
  return "data: {\"choices\":[{\"index\":0,\"text\":\"" + text + "\",\"finish_reason\":null}]}\n\n";
}

TEST_F(TimedRequestTest, CompletionsStreamTimings) {
  const RequestOutput o =
      run(ApiKind::kCompletions, true, 200,
          {{100, completion_event("")},  // an empty first chunk is not the first token
           {150, completion_event(" a")},
           {170, completion_event(" b") + completion_event(" c")},  // two in one read
           {250, completion_event(" d")},
           {260,
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":4}}\n\n"
            "data: [DONE]\n\n"}},
          270);
  ASSERT_TRUE(o.success) << o.error;
  EXPECT_NEAR(o.ttft_s, 0.150, 1e-9);
  ASSERT_EQ(o.itl_s.size(), 3u);
  EXPECT_NEAR(o.itl_s[0], 0.020, 1e-9);
  EXPECT_NEAR(o.itl_s[1], 0.0, 1e-9);
  EXPECT_NEAR(o.itl_s[2], 0.080, 1e-9);
  EXPECT_NEAR(o.latency_s, 0.270, 1e-9);
  EXPECT_EQ(o.output_len, 4);
  EXPECT_EQ(o.prompt_len, 4);  // the server's count wins over the dataset's 3
  EXPECT_EQ(o.generated_text, " a b c d");
}

TEST_F(TimedRequestTest, WithoutUsageCountsTextChunksAndKeepsTheDatasetPromptLength) {
  const RequestOutput o =
      run(ApiKind::kCompletions, true, 200,
          {{10, completion_event("x") + completion_event("y")}, {20, "data: [DONE]\n\n"}}, 20);
  ASSERT_TRUE(o.success) << o.error;
  EXPECT_EQ(o.output_len, 2);
  EXPECT_EQ(o.prompt_len, 3);
}

TEST_F(TimedRequestTest, ChatStreamReadsDeltas) {
  const auto chat = [](const std::string& content) {
    return "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + content + "\"}}]}\n\n";
  };
  const RequestOutput o =
      run(ApiKind::kChat, true, 200,
          {{5, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n"},
           {40, chat("Hi")},
           {60, chat("!")},
           {61, "data: [DONE]\n\n"}},
          61);
  ASSERT_TRUE(o.success) << o.error;
  EXPECT_NEAR(o.ttft_s, 0.040, 1e-9);
  EXPECT_EQ(o.itl_s.size(), 1u);
  EXPECT_EQ(o.generated_text, "Hi!");
}

TEST_F(TimedRequestTest, GenerateSpreadsAGapOverTheTokensItCarries) {
  const auto gen = [](const std::string& text, int tokens) {
    return "data: {\"text\":\"" + text +
           "\",\"meta_info\":{\"prompt_tokens\":4,\"completion_tokens\":" + std::to_string(tokens) +
           ",\"finish_reason\":null}}\n\n";
  };
  const RequestOutput o = run(
      ApiKind::kGenerate, true, 200,
      {{30, gen("a", 1)}, {90, gen("abc", 3)}, {100, gen("abcd", 4)}, {101, "data: [DONE]\n\n"}},
      101);
  ASSERT_TRUE(o.success) << o.error;
  EXPECT_NEAR(o.ttft_s, 0.030, 1e-9);
  ASSERT_EQ(o.itl_s.size(), 3u);  // 60 ms over 2 tokens, then 10 ms
  EXPECT_NEAR(o.itl_s[0], 0.030, 1e-9);
  EXPECT_NEAR(o.itl_s[1], 0.030, 1e-9);
  EXPECT_NEAR(o.itl_s[2], 0.010, 1e-9);
  EXPECT_EQ(o.output_len, 4);
  EXPECT_EQ(o.generated_text, "abcd");
}

// Tokens that end inside a UTF-8 character come in chunks without text; the gap until the next
// text is spread over every token since the last text, as SGLang's bench_serving does, not
// charged to the one token of the chunk that completes the character.
TEST_F(TimedRequestTest, GenerateGapsSpanTheTokensOfChunksWithoutText) {
  const auto gen = [](const std::string& text, int tokens) {
    return "data: {\"text\":\"" + text +
           "\",\"meta_info\":{\"completion_tokens\":" + std::to_string(tokens) + "}}\n\n";
  };
  const RequestOutput o = run(ApiKind::kGenerate, true, 200,
                              {{10, gen("a", 1)},
                               {20, gen("a", 2)},
                               {30, gen("a", 3)},
                               {40, gen("ab", 4)},
                               {50, "data: [DONE]\n\n"}},
                              50);
  ASSERT_TRUE(o.success) << o.error;
  EXPECT_NEAR(o.ttft_s, 0.010, 1e-9);
  ASSERT_EQ(o.itl_s.size(), 3u);  // 30 ms over the 3 tokens after the first
  for (double itl : o.itl_s) EXPECT_NEAR(itl, 0.010, 1e-9);
  EXPECT_EQ(o.output_len, 4);
}

TEST_F(TimedRequestTest, NotStreamingTtftIsTheLatency) {
  const RequestOutput o =
      run(ApiKind::kCompletions, false, 200,
          {{300, "{\"choices\":[{\"text\":\"abc\",\"finish_reason\":\"length\"}],"},
           {310, "\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":4}}"}},
          320);
  ASSERT_TRUE(o.success) << o.error;
  EXPECT_NEAR(o.ttft_s, 0.320, 1e-9);
  EXPECT_NEAR(o.latency_s, 0.320, 1e-9);
  EXPECT_TRUE(o.itl_s.empty());
  EXPECT_EQ(o.output_len, 4);
}

TEST_F(TimedRequestTest, Failures) {
  const RequestOutput http =
      run(ApiKind::kCompletions, true, 503, {{5, "{\"error\":{\"message\":\"queue full\"}}"}}, 6);
  EXPECT_FALSE(http.success);
  EXPECT_NE(http.error.find("HTTP 503"), std::string::npos) << http.error;
  EXPECT_NE(http.error.find("queue full"), std::string::npos) << http.error;

  const RequestOutput cut = run(ApiKind::kCompletions, true, 200, {{5, completion_event("a")}}, 6);
  EXPECT_FALSE(cut.success);
  EXPECT_NE(cut.error.find("[DONE]"), std::string::npos) << cut.error;

  const RequestOutput error_event =
      run(ApiKind::kCompletions, true, 200,
          {{5, "data: {\"error\":{\"message\":\"boom\"}}\n\ndata: [DONE]\n\n"}}, 6);
  EXPECT_FALSE(error_event.success);
  EXPECT_NE(error_event.error.find("boom"), std::string::npos) << error_event.error;

  const RequestOutput aborted = run(
      ApiKind::kCompletions, true, 200,
      {{5,
        "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"abort\"}]}\n\ndata: [DONE]\n\n"}},
      6);
  EXPECT_FALSE(aborted.success);

  const RequestOutput transport =
      run(ApiKind::kCompletions, true, 200, {}, 6, internal_error("read body: connection reset"));
  EXPECT_FALSE(transport.success);
  EXPECT_EQ(transport.error, "read body: connection reset");

  const RequestOutput garbage =
      run(ApiKind::kCompletions, true, 200, {{5, "data: {not json\n\ndata: [DONE]\n\n"}}, 6);
  EXPECT_FALSE(garbage.success);
}

TEST(ApiProtocol, RequestBodies) {
  DatasetRow row;
  row.prompt = "once upon";
  row.output_len = 17;
  RequestBodyOptions o;
  o.model = "m";
  o.extra_body = parse_extra_body(R"({"top_k": 1, "temperature": 0.5})").value();
  const auto completions = nlohmann::json::parse(make_request_body(ApiKind::kCompletions, row, o));
  EXPECT_EQ(completions["prompt"], "once upon");
  EXPECT_EQ(completions["max_tokens"], 17);
  EXPECT_EQ(completions["ignore_eos"], true);
  EXPECT_EQ(completions["stream"], true);
  EXPECT_EQ(completions["stream_options"]["include_usage"], true);
  EXPECT_EQ(completions["model"], "m");
  EXPECT_EQ(completions["top_k"], 1);
  EXPECT_EQ(completions["temperature"], 0.5);  // the extra body wins
  const auto chat = nlohmann::json::parse(make_request_body(ApiKind::kChat, row, o));
  EXPECT_EQ(chat["messages"][0]["content"], "once upon");
  o.stream = false;
  o.extra_body = nullptr;
  const auto generate = nlohmann::json::parse(make_request_body(ApiKind::kGenerate, row, o));
  EXPECT_EQ(generate["text"], "once upon");
  EXPECT_EQ(generate["sampling_params"]["max_new_tokens"], 17);
  EXPECT_EQ(generate["sampling_params"]["ignore_eos"], true);
  EXPECT_EQ(generate["stream"], false);
  EXPECT_FALSE(parse_extra_body("[1]").ok());
  EXPECT_TRUE(parse_extra_body("").ok());
}

TEST(ApiProtocol, BackendNames) {
  EXPECT_EQ(*api_for_backend("sglang"), ApiKind::kGenerate);
  EXPECT_EQ(*api_for_backend("sglang-oai"), ApiKind::kCompletions);
  EXPECT_EQ(*api_for_backend("vllm"), ApiKind::kCompletions);
  EXPECT_EQ(*api_for_backend("openai-chat"), ApiKind::kChat);
  EXPECT_FALSE(api_for_backend("trt").ok());
}

}  // namespace
}  // namespace sgl::bench_serving
