// The reasoning fields of the Responses and Messages requests: reasoning.effort and thinking as
// the template's enable_thinking / reasoning_effort and the request's thinking switch,
// thinking.budget_tokens as the reasoning cap, earlier reasoning sent back as an assistant turn's
// reasoning_content, and what is refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "server/anthropic_json.h"
#include "server/openai_json.h"
#include "server/responses_json.h"

namespace sgl::server {
namespace {

using json = nlohmann::json;

json kwargs(const ChatRequest& r) {
  return r.template_kwargs_json.empty() ? json() : json::parse(r.template_kwargs_json);
}

std::string error(const Status& s) { return s.message(); }

TEST(ResponsesReasoning, EffortSwitchesThinking) {
  auto plain = parse_responses_request(R"({"input": "hi"})");
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_FALSE(plain->chat.thinking.has_value());
  EXPECT_TRUE(plain->chat.separate_reasoning);
  EXPECT_FALSE(plain->reasoning_effort.has_value());

  auto low = parse_responses_request(R"({"input": "hi", "reasoning": {"effort": "low"}})");
  ASSERT_TRUE(low.ok()) << low.status().to_string();
  EXPECT_EQ(low->reasoning_effort, "low");
  EXPECT_EQ(low->chat.thinking, true);
  EXPECT_EQ(low->chat.enable_thinking, true);
  EXPECT_EQ(kwargs(low->chat), (json{{"enable_thinking", true}, {"reasoning_effort", "low"}}));

  auto none = parse_responses_request(
      R"({"input": "hi", "reasoning": {"effort": "none", "summary": null},
          "chat_template_kwargs": {"x": 1}})");
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_EQ(none->chat.thinking, false);
  EXPECT_EQ(none->chat.enable_thinking, false);
  EXPECT_EQ(kwargs(none->chat), (json{{"enable_thinking", false}, {"x", 1}}));

  auto null_effort = parse_responses_request(R"({"input": "hi", "reasoning": {"effort": null}})");
  ASSERT_TRUE(null_effort.ok());
  EXPECT_FALSE(null_effort->chat.thinking.has_value());
}

// The chat route's reasoning_effort: the same switch as reasoning.effort.
TEST(ChatReasoning, EffortSwitchesThinking) {
  const std::string user = R"("messages": [{"role": "user", "content": "hi"}])";
  auto low = parse_chat_request("{" + user + R"(, "reasoning_effort": "low"})");
  ASSERT_TRUE(low.ok()) << low.status().to_string();
  EXPECT_EQ(low->thinking, true);
  EXPECT_EQ(low->enable_thinking, true);
  EXPECT_EQ(kwargs(*low), (json{{"enable_thinking", true}, {"reasoning_effort", "low"}}));
  auto none = parse_chat_request("{" + user + R"(, "reasoning_effort": "none"})");
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_EQ(none->thinking, false);
  EXPECT_EQ(kwargs(*none), (json{{"enable_thinking", false}}));
  auto absent = parse_chat_request("{" + user + R"(, "reasoning_effort": null})");
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->thinking.has_value());
  EXPECT_TRUE(absent->template_kwargs_json.empty());
  for (const std::string bad : {R"("reasoning_effort": "extreme")", R"("reasoning_effort": 2)",
                                R"("reasoning_effort": "none",
                                   "chat_template_kwargs": {"enable_thinking": true})"}) {
    auto r = parse_chat_request("{" + user + ", " + bad + "}");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(error(r.status()).find("reasoning_effort"), std::string::npos) << error(r.status());
  }
}

TEST(ResponsesReasoning, RefusesWhatItCannotHonour) {
  for (const char* body : {
           R"({"input": "hi", "reasoning": {"effort": "extreme"}})",
           R"({"input": "hi", "reasoning": {"effort": 3}})",
           R"({"input": "hi", "reasoning": {"summary": "auto"}})",
           R"({"input": "hi", "reasoning": {"generate_summary": "detailed"}})",
           R"({"input": "hi", "reasoning": {"mode": "pro"}})",
           R"({"input": "hi", "reasoning": {"shiny": true}})",
           R"({"input": "hi", "reasoning": "high"})",
           R"({"input": "hi", "reasoning": {"effort": "none"},
               "chat_template_kwargs": {"enable_thinking": true}})",
       }) {
    auto r = parse_responses_request(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_NE(error(r.status()).find("reasoning"), std::string::npos) << error(r.status());
  }
}

TEST(ResponsesReasoning, ReasoningItemsBecomeTheTurnsReasoningContent) {
  auto r = parse_responses_request(R"({"input": [
      {"role": "user", "content": "hi"},
      {"type": "reasoning", "id": "rs_1", "summary": [],
       "content": [{"type": "reasoning_text", "text": "think"}]},
      {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
      {"type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}]},
      {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "c", "output": "done"}]})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const json messages = json::parse(r->chat.messages_json);
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[1]["reasoning_content"], "think");
  EXPECT_EQ(messages[1]["content"], "ok");
  EXPECT_EQ(messages[2]["reasoning_content"], "plan");
  EXPECT_EQ(messages[2]["tool_calls"][0]["function"]["name"], "f");
  EXPECT_FALSE(messages[3].contains("reasoning_content"));

  // Without a reasoning item between them, a reply's text and its call are one assistant turn.
  auto joined = parse_responses_request(R"({"input": [
      {"role": "user", "content": "hi"},
      {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
      {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
      {"type": "function_call", "call_id": "d", "name": "g", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "c", "output": "done"}]})");
  ASSERT_TRUE(joined.ok()) << joined.status().to_string();
  const json turns = json::parse(joined->chat.messages_json);
  ASSERT_EQ(turns.size(), 3u);
  EXPECT_EQ(turns[1]["content"], "ok");
  ASSERT_EQ(turns[1]["tool_calls"].size(), 2u);
  EXPECT_EQ(turns[1]["tool_calls"][1]["function"]["name"], "g");

  // A reasoning item must lead into an assistant turn.
  for (const char* input : {
           R"([{"type": "reasoning", "summary": []}, {"role": "user", "content": "hi"}])",
           R"([{"role": "user", "content": "hi"}, {"type": "reasoning", "summary": []}])",
           R"([{"type": "reasoning", "content": [{"type": "input_image"}]},
               {"role": "assistant", "content": "x"}])",
       }) {
    auto bad = parse_responses_request(std::string(R"({"input": )") + input + "}");
    ASSERT_FALSE(bad.ok()) << input;
    EXPECT_NE(error(bad.status()).find("input["), std::string::npos) << error(bad.status());
  }
}

TEST(MessagesThinking, TypesSwitchThinkingAndBudgetCapsIt) {
  auto plain = parse_messages_request(R"({"max_tokens": 8, "messages": [{"role": "user",
                                          "content": "hi"}]})");
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_FALSE(plain->thinking.has_value());
  EXPECT_FALSE(plain->max_reasoning_tokens.has_value());
  EXPECT_TRUE(plain->separate_reasoning);

  auto on = parse_messages_request(
      R"({"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
          "thinking": {"type": "enabled", "budget_tokens": 1024, "display": "summarized"}})");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  EXPECT_EQ(on->thinking, true);
  EXPECT_EQ(on->enable_thinking, true);
  EXPECT_EQ(on->max_reasoning_tokens, 1024);

  auto adaptive = parse_messages_request(
      R"({"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
          "thinking": {"type": "adaptive"}})");
  ASSERT_TRUE(adaptive.ok()) << adaptive.status().to_string();
  EXPECT_EQ(adaptive->thinking, true);
  EXPECT_FALSE(adaptive->max_reasoning_tokens.has_value());

  auto off = parse_messages_request(
      R"({"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
          "thinking": {"type": "disabled"}})");
  ASSERT_TRUE(off.ok()) << off.status().to_string();
  EXPECT_EQ(off->thinking, false);
  EXPECT_EQ(kwargs(*off), (json{{"enable_thinking", false}}));
}

TEST(MessagesThinking, OutputConfigEffortIsTheReasoningEffort) {
  auto high = parse_messages_request(
      R"({"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
          "output_config": {"effort": "high"}})");
  ASSERT_TRUE(high.ok()) << high.status().to_string();
  EXPECT_EQ(high->thinking, true);
  EXPECT_EQ(kwargs(*high), (json{{"enable_thinking", true}, {"reasoning_effort", "high"}}));
  auto xhigh = parse_messages_request(
      R"({"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
          "output_config": {"effort": "xhigh", "format": null}})");
  ASSERT_TRUE(xhigh.ok()) << xhigh.status().to_string();
  EXPECT_EQ(kwargs(*xhigh), (json{{"enable_thinking", true}, {"reasoning_effort", "max"}}));
  // Thinking switched off by one field and on by the other: refused, naming the second.
  auto clash = parse_messages_request(
      R"({"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
          "thinking": {"type": "disabled"}, "output_config": {"effort": "low"}})");
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(error(clash.status()).find("output_config.effort"), std::string::npos)
      << error(clash.status());
  for (const char* config :
       {R"({"effort": "extreme"})", R"({"effort": "none"})", R"({"colour": 1})", R"([])"}) {
    auto bad = parse_messages_request(
        std::string(R"({"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
                        "output_config": )") +
        config + "}");
    ASSERT_FALSE(bad.ok()) << config;
    EXPECT_NE(error(bad.status()).find("output_config"), std::string::npos) << error(bad.status());
  }
}

TEST(MessagesThinking, RefusesWhatItCannotHonour) {
  for (const char* thinking : {
           R"({"type": "enabled"})",
           R"({"type": "enabled", "budget_tokens": 0})",
           R"({"type": "enabled", "budget_tokens": "many"})",
           R"({"type": "between_tools"})",
           R"({"type": "enabled", "budget_tokens": 9, "display": "omitted"})",
           R"({"type": "disabled", "budget_tokens": 9})",
           R"({"budget_tokens": 9})",
           R"(true)",
       }) {
    auto r = parse_messages_request(
        std::string(R"({"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
                        "thinking": )") +
        thinking + "}");
    ASSERT_FALSE(r.ok()) << thinking;
    EXPECT_NE(error(r.status()).find("'thinking"), std::string::npos) << error(r.status());
  }
}

TEST(MessagesThinking, EarlierThinkingBlocksBecomeReasoningContent) {
  auto r = parse_messages_request(R"({"max_tokens": 8, "messages": [
      {"role": "user", "content": "hi"},
      {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": ""},
                                        {"type": "text", "text": "ok"}]},
      {"role": "user", "content": "more"}]})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const json messages = json::parse(r->messages_json);
  EXPECT_EQ(messages[1]["reasoning_content"], "hmm");
  EXPECT_EQ(messages[1]["content"], "ok");
  EXPECT_FALSE(messages[0].contains("reasoning_content"));
  // Only an assistant's turn has thinking; a bad block names itself.
  EXPECT_FALSE(parse_messages_request(R"({"max_tokens": 8, "messages": [{"role": "user",
      "content": [{"type": "thinking", "thinking": "x"}]}]})")
                   .ok());
  auto bad = parse_messages_request(R"({"max_tokens": 8, "messages": [
      {"role": "user", "content": "hi"},
      {"role": "assistant", "content": [{"type": "thinking", "thinking": 1}]},
      {"role": "user", "content": "more"}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(error(bad.status()).find("messages[1].content[0].thinking"), std::string::npos)
      << error(bad.status());
}

}  // namespace
}  // namespace sgl::server
