// Unit tests of the server's small pieces: RequestStream notification, SSE framing, metrics
// histograms, request parsing and error bodies, the request registry.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "engine/request_stream.h"
#include "server/choice_stream.h"
#include "server/errors.h"
#include "server/metrics.h"
#include "server/openai_json.h"
#include "server/request_registry.h"
#include "server/responses_json.h"
#include "server/routed_experts_json.h"
#include "server/sse.h"
#include "server/tool_choice.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace sgl::server {
namespace {

// A request is found by its id (all its rids) or by one of its items' ids (that rid alone); a
// batch counts once, and its rids once each.
TEST(RequestRegistry, FindsRequestsAndBatchItems) {
  RequestRegistry r;
  const uint64_t batch = r.add("req", {11, 12, 13}, {"a", "b", "c"});
  const uint64_t plain = r.add("solo", {21});
  r.add("req", {31});  // client ids may repeat
  EXPECT_EQ(r.find("req"), (std::vector<uint64_t>{11, 12, 13, 31}));
  EXPECT_EQ(r.find("b"), (std::vector<uint64_t>{12}));
  EXPECT_EQ(r.find("solo"), (std::vector<uint64_t>{21}));
  EXPECT_TRUE(r.find("zzz").empty());
  EXPECT_EQ(r.size(), 3u);
  EXPECT_EQ(r.all_rids().size(), 5u);
  r.remove(batch);
  r.remove(plain);
  EXPECT_TRUE(r.find("b").empty());
  EXPECT_EQ(r.size(), 1u);
}

// A client's ids are claimed before submission: a second claim of one that is claimed, names a
// request in flight (its id or an item's) or repeats within the claim is refused; released by
// the claim's end, and by finish() for a registered request (its reply is being sent).
TEST(RequestRegistry, ClaimsRefuseDuplicateClientIds) {
  RequestRegistry r;
  {
    auto first = r.claim({"x"});
    ASSERT_TRUE(first.ok());
    auto again = r.claim({"y", "x"});
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.status().message(), "Duplicate request ID detected: x");
    EXPECT_TRUE(r.claim({}).ok());  // a request without client ids claims nothing
  }
  EXPECT_TRUE(r.claim({"x"}).ok());  // released
  EXPECT_FALSE(r.claim({"z", "z"}).ok());
  const uint64_t batch = r.add("req", {11, 12}, {"a", "b"});
  EXPECT_FALSE(r.claim({"b"}).ok());
  EXPECT_FALSE(r.claim({"req"}).ok());
  r.finish(batch);
  EXPECT_TRUE(r.claim({"b"}).ok());
  EXPECT_EQ(r.size(), 1u);  // still counted until removed (the drain waits for its reply)
  r.remove(batch);
  EXPECT_EQ(r.size(), 0u);
}

TEST(RequestStreamNotify, CalledAfterPushAndOnceForPendingEvents) {
  engine::RequestStream stream(7);
  stream.push(engine::StreamEvent{{1}, {}, {}, std::nullopt, {}});
  std::atomic<int> calls{0};
  stream.set_notify([&] { ++calls; });
  EXPECT_EQ(calls, 1);  // an event was already waiting
  stream.push(engine::StreamEvent{{2}, {}, {}, std::nullopt, {}});
  EXPECT_EQ(calls, 2);
  auto merged = stream.next(std::chrono::milliseconds(0));
  ASSERT_TRUE(merged);
  EXPECT_EQ(merged->token_ids, (std::vector<int32_t>{1, 2}));
  EXPECT_FALSE(stream.next(std::chrono::milliseconds(0)));
  stream.set_notify({});
  stream.push(engine::StreamEvent{{3}, {}, {}, scheduler::FinishState{}, {}});
  EXPECT_EQ(calls, 2);
  stream.push(engine::StreamEvent{{4}, {}, {}, std::nullopt, {}});  // after the finish: dropped
  EXPECT_EQ(stream.next(std::chrono::milliseconds(0))->token_ids, (std::vector<int32_t>{3}));
  EXPECT_TRUE(stream.done());
}

// Deltas merged into one (an event of several tokens taken one at a time under stop strings):
// argument pieces join their call's entry, also a call that began in an earlier pull, whose
// pieces become one entry without an id; the total keeps one whole entry per call.
TEST(ChoiceDeltas, ToolCallPiecesJoinTheirCall) {
  const auto delta = [](std::vector<ToolCallDelta> calls) {
    ChoiceDelta d;
    d.tool_calls = std::move(calls);
    return d;
  };
  ChoiceDelta total;
  append_delta(total, delta({{0, "call_a", "f", "{\"x\""}}));
  ChoiceDelta pull;  // call 0 began in the previous pull; call 1 begins in this one
  append_delta(pull, delta({{0, "", "", ": 1"}}));
  append_delta(pull, delta({{0, "", "", "}"}, {1, "call_b", "g", "{"}}));
  append_delta(pull, delta({{1, "", "", "}"}}));
  ASSERT_EQ(pull.tool_calls.size(), 2u);
  EXPECT_EQ(pull.tool_calls[0].index, 0);
  EXPECT_EQ(pull.tool_calls[0].id, "");
  EXPECT_EQ(pull.tool_calls[0].arguments, ": 1}");
  EXPECT_EQ(pull.tool_calls[1].index, 1);
  EXPECT_EQ(pull.tool_calls[1].id, "call_b");
  EXPECT_EQ(pull.tool_calls[1].name, "g");
  EXPECT_EQ(pull.tool_calls[1].arguments, "{}");
  append_delta(total, pull);
  ASSERT_EQ(total.tool_calls.size(), 2u);
  EXPECT_EQ(total.tool_calls[0].id, "call_a");
  EXPECT_EQ(total.tool_calls[0].arguments, "{\"x\": 1}");
  EXPECT_EQ(total.tool_calls[1].id, "call_b");
  EXPECT_EQ(total.tool_calls[1].arguments, "{}");
}

TEST(Sse, FramesEventsAndSplitsLines) {
  EXPECT_EQ(sse_data("{\"a\":1}"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_data("x\ny"), "data: x\ndata: y\n\n");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
}

TEST(Metrics, HistogramIsCumulative) {
  Histogram h({1.0, 2.0});
  h.observe(0.5);
  h.observe(1.5);
  h.observe(9.0);
  std::string out;
  h.render("m", "k=\"v\"", out);
  EXPECT_NE(out.find("m_bucket{k=\"v\",le=\"1.0\"} 1.0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("m_bucket{k=\"v\",le=\"2.0\"} 2.0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("m_bucket{k=\"v\",le=\"+Inf\"} 3.0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("m_count{k=\"v\"} 3.0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("m_sum{k=\"v\"} 11.0\n"), std::string::npos) << out;
}

// Values as Python's prometheus_client writes them (SGLang's bounds read le="0.1", not
// le="0.10000000000000001").
TEST(Metrics, NumbersAsPrometheusClientWritesThem) {
  Histogram h({1e-05, 0.0001, 0.005, 0.1, 2.5, 60, 123456, 1500000, 1e16});
  h.observe(0.3);
  std::string out;
  h.render("m", "k=\"v\"", out);
  for (const char* le :
       {"1e-05", "0.0001", "0.005", "0.1", "2.5", "60.0", "123456.0", "1.5e+06", "1e+16"}) {
    EXPECT_NE(out.find(std::string("le=\"") + le + "\""), std::string::npos) << le << "\n" << out;
  }
  EXPECT_NE(out.find("m_sum{k=\"v\"} 0.3\n"), std::string::npos) << out;
}

// SGLang's token bucket rules (--prompt-tokens-buckets, --generation-tokens-buckets).
TEST(Metrics, TokenBucketRules) {
  const auto rule = [](std::vector<std::string> r) { return token_buckets_from_rule(r, "--f"); };
  EXPECT_TRUE(rule({})->empty());  // SGLang's defaults
  EXPECT_TRUE(rule({"default"})->empty());
  // SGLang's help example: tse 1000 2 8.
  EXPECT_EQ(*rule({"tse", "1000", "2", "8"}),
            (std::vector<double>{984, 992, 996, 998, 1000, 1002, 1004, 1008, 1016}));
  // Floored at 0, repeats dropped, an odd count rounded up to the next pair.
  EXPECT_EQ(*rule({"tse", "3", "2", "3"}), (std::vector<double>{0, 1, 3, 5, 7}));
  EXPECT_EQ(*rule({"custom", "500", "10", "50.5"}), (std::vector<double>{10, 50.5, 500}));
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"default", "5"},
                                             {"linear", "1"},
                                             {"tse", "1000", "2"},
                                             {"tse", "1000", "1", "8"},
                                             {"tse", "0", "2", "8"},
                                             {"tse", "1000", "2", "2.5"},
                                             {"custom"},
                                             {"custom", "-1"},
                                             {"custom", "x"},
                                             {"custom", "5", "5"}}) {
    const auto r = rule(bad);
    ASSERT_FALSE(r.ok()) << bad[0];
    EXPECT_EQ(r.status().message().rfind("--f: ", 0), 0u) << r.status().message();
  }
}

// The token histograms: prompt, uncached prompt (prompt - cached) and generation lengths.
TEST(Metrics, TokenHistogramsObserveEachFinishedRequest) {
  MetricsOptions options;
  options.prompt_token_buckets = {10, 100};
  Metrics metrics("m", options);
  metrics.observe_finished(1.0, "stop", 50, 7, 45);
  const std::vector<engine::EngineStats> stats(1);
  const std::string out = metrics.render(stats);
  for (const char* line :
       {"sglang:prompt_tokens_histogram_bucket{model_name=\"m\",le=\"10.0\"} 0.0",
        "sglang:prompt_tokens_histogram_bucket{model_name=\"m\",le=\"100.0\"} 1.0",
        "sglang:prompt_tokens_histogram_sum{model_name=\"m\"} 50.0",
        "sglang:uncached_prompt_tokens_histogram_bucket{model_name=\"m\",le=\"10.0\"} 1.0",
        "sglang:uncached_prompt_tokens_histogram_sum{model_name=\"m\"} 5.0",
        // SGLang's default bounds where none are given.
        "sglang:generation_tokens_histogram_bucket{model_name=\"m\",le=\"100.0\"} 1.0",
        "sglang:generation_tokens_histogram_bucket{model_name=\"m\",le=\"1.1e+06\"} 1.0",
        "sglang:generation_tokens_histogram_sum{model_name=\"m\"} 7.0"}) {
    EXPECT_NE(out.find(std::string(line) + "\n"), std::string::npos) << line << "\n" << out;
  }
}

TEST(OpenAiJson, ParsesPromptFormsAndRejectsBadFields) {
  auto r = parse_completion_request(R"({"prompt": [[1, 2], [3]], "n": 2, "stop": "x"})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->prompts.size(), 2u);
  EXPECT_EQ(r->prompts[1].ids, (std::vector<int32_t>{3}));
  EXPECT_EQ(r->sampling.stop, (std::vector<std::string>{"x"}));
  EXPECT_EQ(r->sampling.max_tokens, 16);  // OpenAI's default
  EXPECT_FALSE(parse_completion_request(R"({"prompt": "a", "max_tokens": "5"})").ok());
  EXPECT_FALSE(parse_completion_request(R"({"prompt": "a", "temperature": -1})").ok());
  EXPECT_FALSE(parse_completion_request("{\"prompt\": \"\xff\"}").ok());  // invalid UTF-8
  EXPECT_FALSE(parse_completion_request(std::string(100, '[')).ok());     // too deep
  EXPECT_EQ(parse_completion_request(R"({"prompt": "a", "presence_penalty": 3})").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(parse_completion_request(R"({"prompt": "a", "whatever": {"x": 1}})").ok());
}

TEST(OpenAiJson, ParsesLogitProcessingAndPromptLogprobFields) {
  auto r = parse_completion_request(
      R"({"prompt": "a", "logit_bias": {"5": 2.5, "17": 0, "300": -100}, "min_tokens": 3,
          "frequency_penalty": -1.5, "presence_penalty": 0.5, "repetition_penalty": 1.2})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  // Zero biases are dropped; the rest keep their ids.
  std::sort(r->sampling.logit_bias.begin(), r->sampling.logit_bias.end());
  EXPECT_EQ(r->sampling.logit_bias,
            (std::vector<std::pair<int64_t, double>>{{5, 2.5}, {300, -100.0}}));
  EXPECT_EQ(r->sampling.min_tokens, 3);
  EXPECT_EQ(r->sampling.frequency_penalty, -1.5);
  EXPECT_EQ(r->sampling.repetition_penalty, 1.2);
  // min_tokens may not exceed max_tokens (16 by default for completions).
  auto over = parse_completion_request(R"({"prompt": "a", "min_tokens": 17})");
  EXPECT_EQ(over.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(over.status().message().find("'min_tokens'"), std::string::npos);
  EXPECT_TRUE(parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}],
                                    "min_tokens": 500})")
                  .ok());  // no max_tokens: up to the context
  // The conversation, its tools and the generation prompt come from the request, never from
  // chat_template_kwargs; documents and the special tokens may be given there (transformers).
  for (const char* own : {"messages", "tools", "add_generation_prompt", "continue_final_message"}) {
    const auto dup = parse_chat_request(
        std::string(
            R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {")") +
        own + "\": false}}");
    ASSERT_FALSE(dup.ok()) << own;
    EXPECT_NE(dup.status().message().find(std::string("chat_template_kwargs.") + own),
              std::string::npos)
        << dup.status().to_string();
  }
  EXPECT_TRUE(parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}],
                                    "chat_template_kwargs": {"enable_thinking": false,
                                    "documents": [{"text": "d"}], "bos_token": "<s>"}})")
                  .ok());
  auto native = parse_generate_request(
      R"({"text": "a", "return_logprob": true, "logprob_start_len": 0,
          "sampling_params": {"min_new_tokens": 4, "max_new_tokens": 8, "logit_bias": {"1": 1}}})");
  ASSERT_TRUE(native.ok()) << native.status().to_string();
  EXPECT_EQ(native->logprob_start_len, 0);
  EXPECT_EQ(native->sampling.min_tokens, 4);
  EXPECT_EQ(native->sampling.logit_bias.size(), 1u);
  auto native_over = parse_generate_request(
      R"({"text": "a", "sampling_params": {"min_new_tokens": 9, "max_new_tokens": 8}})");
  EXPECT_NE(native_over.status().message().find("'min_new_tokens'"), std::string::npos);
  EXPECT_FALSE(parse_generate_request(R"({"text": "a", "logprob_start_len": -2})").ok());
  // Sampling fields at /generate's top level are refused (0 too), never ignored; null is nothing.
  for (const char* key : {"temperature", "max_new_tokens", "stop", "n", "json_schema"}) {
    const std::string field = std::string(R"({"text": "a", ")") + key + "\": ";
    const auto zero = parse_generate_request(field + "0}");
    ASSERT_FALSE(zero.ok()) << key;
    EXPECT_NE(zero.status().message().find("belongs inside sampling_params"), std::string::npos)
        << zero.status().to_string();
    EXPECT_TRUE(parse_generate_request(field + "null}").ok()) << key;
  }
  EXPECT_FALSE(parse_completion_request(R"({"prompt": "a", "logit_bias": {"-1": 1}})").ok());
}

// continue_final_message takes the final assistant message out of the conversation the
// template renders: its text (parts joined as the route joins them) is what the prompt ends with.
TEST(OpenAiJson, ContinueFinalMessageTakesTheAssistantsText) {
  auto r = parse_chat_request(R"({"messages": [{"role": "user", "content": "x"},
      {"role": "assistant", "content": [{"type": "text", "text": "Once"},
                                        {"type": "text", "text": "upon"}]}],
      "continue_final_message": true})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->assistant_prefix, std::optional<std::string>("Once upon"));
  const nlohmann::json messages = nlohmann::json::parse(r->messages_json);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0]["role"], "user");
  // Without it (or false) the conversation is rendered whole and a new turn follows.
  for (const char* flag : {"", R"(, "continue_final_message": false)"}) {
    auto plain = parse_chat_request(std::string(R"({"messages": [{"role": "user", "content": "x"},
        {"role": "assistant", "content": "y"}])") +
                                    flag + "}");
    ASSERT_TRUE(plain.ok()) << plain.status().to_string();
    EXPECT_FALSE(plain->assistant_prefix.has_value());
    EXPECT_EQ(nlohmann::json::parse(plain->messages_json).size(), 2u);
  }
  // An empty assistant message continues from the opened turn alone.
  auto empty = parse_chat_request(R"({"messages": [{"role": "user", "content": "x"},
      {"role": "assistant", "content": null}], "continue_final_message": true})");
  ASSERT_TRUE(empty.ok()) << empty.status().to_string();
  EXPECT_EQ(empty->assistant_prefix, std::optional<std::string>(""));
  auto user_last = parse_chat_request(
      R"({"messages": [{"role": "user", "content": "x"}], "continue_final_message": true})");
  EXPECT_EQ(user_last.status().code(), StatusCode::kInvalidArgument);
}

TEST(OpenAiJson, GenerateTokenIdsLogprob) {
  auto one = parse_generate_request(R"({"text": ["a", "b"], "token_ids_logprob": [5, 7, 5]})");
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  EXPECT_EQ(*one->token_ids_logprob, (std::vector<std::vector<int32_t>>{{5, 7, 5}}));
  auto each = parse_generate_request(R"({"text": ["a", "b"], "token_ids_logprob": [[1], [2, 3]]})");
  ASSERT_TRUE(each.ok()) << each.status().to_string();
  EXPECT_EQ(each->token_ids_logprob->size(), 2u);
  EXPECT_FALSE(parse_generate_request(R"({"text": "a"})")->token_ids_logprob.has_value());
  EXPECT_FALSE(
      parse_generate_request(R"({"text": "a", "token_ids_logprob": null})")->token_ids_logprob);
  // [] is no list (SGLang's None).
  EXPECT_FALSE(
      parse_generate_request(R"({"text": "a", "token_ids_logprob": []})")->token_ids_logprob);
  for (const char* bad :
       {R"({"text": "a", "token_ids_logprob": [-1]})", R"({"text": "a", "token_ids_logprob": "1"})",
        R"({"text": "a", "token_ids_logprob": [[1], [2]]})",
        R"({"text": "a", "sampling_params": {"token_ids_logprob": [1]}})"}) {
    auto r = parse_generate_request(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("token_ids_logprob"), std::string::npos) << bad;
  }
  std::string many = R"({"text": "a", "token_ids_logprob": [0)";
  for (int i = 1; i <= 128; ++i) many += ", " + std::to_string(i);
  auto over = parse_generate_request(many + "]}");
  EXPECT_NE(over.status().message().find("at most 128"), std::string::npos);
  auto on_openai = parse_completion_request(R"({"prompt": "a", "token_ids_logprob": [1]})");
  EXPECT_NE(on_openai.status().message().find("/generate"), std::string::npos);
}

TEST(OpenAiJson, ReplyExtrasForRollouts) {
  auto completion = parse_completion_request(
      R"({"prompt": "a", "return_token_ids": true, "return_hidden_states": "last"})");
  ASSERT_TRUE(completion.ok()) << completion.status().to_string();
  EXPECT_TRUE(completion->return_token_ids);
  EXPECT_EQ(completion->return_hidden_states, HiddenStatesMode::kLast);
  auto chat = parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}],
                                    "return_prompt_token_ids": true, "return_hidden_states": true,
                                    "return_cached_tokens_details": true,
                                    "return_spec_tokens_details": true,
                                    "return_routed_experts": true, "routed_experts_start_len": 2})");
  ASSERT_TRUE(chat.ok()) << chat.status().to_string();
  EXPECT_TRUE(chat->sglext.cached_tokens_details);
  EXPECT_TRUE(chat->sglext.spec_tokens_details);
  EXPECT_TRUE(chat->sglext.routed_experts.asked);
  EXPECT_EQ(chat->sglext.routed_experts.start_len, 2);
  EXPECT_TRUE(chat->return_prompt_token_ids);
  EXPECT_FALSE(chat->return_token_ids);
  EXPECT_EQ(chat->return_hidden_states, HiddenStatesMode::kAll);
  auto generate = parse_generate_request(
      R"({"text": "a", "return_prompt_token_ids": true, "return_hidden_states": false})");
  ASSERT_TRUE(generate.ok()) << generate.status().to_string();
  EXPECT_TRUE(generate->return_prompt_token_ids);
  EXPECT_EQ(generate->return_hidden_states, HiddenStatesMode::kNone);
  // Each is refused where SGLang lacks it, with a bad value, and (chat's ids) with a stream.
  const std::pair<Status, const char*> refusals[] = {
      {parse_completion_request(R"({"prompt": "a", "return_prompt_token_ids": true})").status(),
       "return_prompt_token_ids"},
      {parse_generate_request(R"({"text": "a", "return_token_ids": true})").status(),
       "return_token_ids"},
      {parse_completion_request(R"({"prompt": "a", "return_hidden_states": "first"})").status(),
       "boolean or \"last\""},
      {parse_generate_request(R"({"text": "a", "return_hidden_states": 1})").status(),
       "return_hidden_states"},
      {parse_generate_request(R"({"text": "a", "return_cached_tokens_details": true})").status(),
       "return_cached_tokens_details"},
      {parse_generate_request(R"({"text": "a", "return_spec_tokens_details": true})").status(),
       "return_spec_tokens_details"},
      {parse_generate_request(R"({"text": "a", "routed_experts_start_len": -1})").status(),
       "routed_experts_start_len"},
      {parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}], "stream": true,
                              "return_token_ids": true})")
           .status(),
       "streaming"},
  };
  for (const auto& [status, words] : refusals) {
    EXPECT_FALSE(status.ok()) << words;
    EXPECT_NE(status.message().find(words), std::string::npos) << status.to_string();
  }
}

// SGLang's layout: [positions, every layer, top_k] little-endian i32, the dense layers' entries 0.
TEST(RoutedExperts, LaysOutEveryLayerFromTheStart) {
  // Layers 0 and 2 of 3 are MoE (top-2); positions 0..3 routed (ids [4, 2, 2]).
  const RoutedExpertsLayout layout{.num_layers = 3, .sparse_layers = {0, 2}, .top_k = 2};
  std::vector<int32_t> ids;
  for (int32_t pos = 0; pos < 4; ++pos) {
    for (int32_t layer : {0, 2}) ids.insert(ids.end(), {10 * pos + layer, 10 * pos + layer + 1});
  }
  auto expected = [&](int64_t start, int64_t end) {
    std::string bytes;
    for (int64_t pos = start; pos < end; ++pos) {
      for (int64_t layer = 0; layer < 3; ++layer) {
        for (int64_t k = 0; k < 2; ++k) {
          const int32_t v = layer == 1 ? 0 : static_cast<int32_t>(10 * pos + layer + k);
          for (int shift = 0; shift < 32; shift += 8)
            bytes.push_back(static_cast<char>(v >> shift));
        }
      }
    }
    return base64_encode(bytes);
  };
  EXPECT_EQ(routed_experts_base64(ids, layout, 0, 4), expected(0, 4));
  EXPECT_EQ(routed_experts_base64(ids, layout, 1, 3), expected(1, 3));
  // `end` past the positions there are stops at them; an empty range is "".
  EXPECT_EQ(routed_experts_base64(ids, layout, 2, 9), expected(2, 4));
  EXPECT_EQ(routed_experts_base64(ids, layout, 3, 3), "");
  EXPECT_EQ(routed_experts_base64({}, layout, 0, 5), "");
}

// A history's tool call arguments reach the template as the object their JSON string holds
// (templates write `arguments | tojson`), on the chat and Responses routes alike; a string that
// is not a JSON object stays a string.
TEST(OpenAiJson, HistoryToolCallArgumentsReachTheTemplateAsObjects) {
  auto chat = parse_chat_request(R"({"messages": [
      {"role": "user", "content": "x"},
      {"role": "assistant", "content": null, "tool_calls": [
          {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}},
          {"id": "b", "type": "function", "function": {"name": "g", "arguments": "not json"}},
          {"id": "c", "type": "function", "function": {"name": "h", "arguments": "5"}}]},
      {"role": "tool", "tool_call_id": "a", "content": "2"}]})");
  ASSERT_TRUE(chat.ok()) << chat.status().to_string();
  const nlohmann::json messages = nlohmann::json::parse(chat->messages_json);
  const nlohmann::json& calls = messages[1]["tool_calls"];
  EXPECT_EQ(calls[0]["function"]["arguments"], nlohmann::json({{"x", 1}}));
  EXPECT_EQ(calls[1]["function"]["arguments"], "not json");
  EXPECT_EQ(calls[2]["function"]["arguments"], "5");
  auto responses = parse_responses_request(R"({"input": [
      {"role": "user", "content": "x"},
      {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{\"x\": 1}"},
      {"type": "function_call_output", "call_id": "a", "output": "2"}]})");
  ASSERT_TRUE(responses.ok()) << responses.status().to_string();
  const nlohmann::json items = nlohmann::json::parse(responses->chat.messages_json);
  EXPECT_EQ(items[1]["tool_calls"][0]["function"]["arguments"], nlohmann::json({{"x", 1}}));
}

// The template sees every tool under auto and required, only the named one under a named
// tool_choice (SGLang's rendering), none under "none"; the parser keeps every tool.
TEST(OpenAiJson, TheTemplateSeesTheToolsACallMayName) {
  const std::string tools = R"("tools": [
      {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}},
      {"type": "function", "function": {"name": "g", "parameters": {"type": "object"}}}])";
  const auto shown = [&](const std::string& choice) {
    auto r = parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}], )" + tools +
                                R"(, "tool_choice": )" + choice + "}");
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    std::vector<std::string> names;
    if (!r.ok() || r->tools_json.empty()) return names;
    EXPECT_EQ(r->tools.size(), 2u);
    for (const auto& tool : nlohmann::json::parse(r->tools_json)) {
      names.push_back(tool["function"]["name"]);
    }
    return names;
  };
  EXPECT_EQ(shown(R"("auto")"), (std::vector<std::string>{"f", "g"}));
  EXPECT_EQ(shown(R"("required")"), (std::vector<std::string>{"f", "g"}));
  EXPECT_EQ(shown(R"({"type": "function", "function": {"name": "g"}})"),
            (std::vector<std::string>{"g"}));
  EXPECT_EQ(shown(R"("none")"), (std::vector<std::string>{}));
}

TEST(Errors, OpenAiShape) {
  HttpResponse r = error_response(400, "bad \"thing\"", "prompt");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, R"({"error":{"message":"bad \"thing\"","type":"invalid_request_error",)"
                    R"("param":"prompt","code":400}})");
  EXPECT_EQ(error_response(resource_exhausted("full")).status, 503);
}

}  // namespace
}  // namespace sgl::server

namespace sgl::server {
namespace {

// Strict tools under tool_choice auto are held where the format has a call marker the model can
// write: qwen25's <tool_call> is ordinary text in the Qwen3 tokenizer; llama3's calls have none.
TEST(ToolChoice, StrictAutoToolsAreHeldWhereTheMarkerCanBeWritten) {
  auto qwen3 =
      tokenizer::Tokenizer::from_dir(sgl::test::testdata_dir().string() + "/tokenizers/qwen3");
  ASSERT_TRUE(qwen3.ok()) << qwen3.status().to_string();
  EXPECT_FALSE(strict_auto_tools_unheld("qwen25", "", **qwen3).has_value());
  EXPECT_FALSE(strict_auto_tools_unheld("qwen3_coder", "qwen3", **qwen3).has_value());
  const auto llama3 = strict_auto_tools_unheld("llama3", "", **qwen3);
  ASSERT_TRUE(llama3.has_value());
  EXPECT_NE(llama3->find("no marker"), std::string::npos) << *llama3;
}

// The grammar spells the reasoning's tags too: where they are special tokens (Magistral's
// [THINK]), it cannot.
TEST(ToolChoice, StrictAutoToolsNeedReasoningTagsAGrammarCanWrite) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("sgl_think_tags_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << R"({"version": "1.0", "added_tokens": [
      {"id": 0, "content": "[THINK]", "single_word": false, "lstrip": false, "rstrip": false,
       "normalized": false, "special": true},
      {"id": 1, "content": "[/THINK]", "single_word": false, "lstrip": false, "rstrip": false,
       "normalized": false, "special": true}],
    "normalizer": null, "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": null,
    "decoder": null, "model": {"type": "BPE", "vocab": {"[THINK]": 0, "[/THINK]": 1, "a": 2},
    "merges": []}})";
  auto tok = tokenizer::Tokenizer::from_dir(dir);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_FALSE(strict_auto_tools_unheld("qwen25", "qwen3", **tok).has_value());
  const auto unheld = strict_auto_tools_unheld("qwen25", "mistral", **tok);
  ASSERT_TRUE(unheld.has_value());
  EXPECT_NE(unheld->find("[THINK] / [/THINK] are special tokens"), std::string::npos) << *unheld;
}

}  // namespace
}  // namespace sgl::server
