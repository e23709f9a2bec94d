// The Messages request's tool use in the chat request's terms: custom tools as function tools,
// tool_choice and disable_parallel_tool_use, tool_use blocks as an assistant's tool_calls and
// tool_result blocks as `tool` messages in their place, and what is refused (server tools,
// features not built, blocks in the wrong turn).
#include "server/anthropic_content.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "server/anthropic_json.h"

namespace sgl::server {
namespace {

using json = nlohmann::json;

const char* kWeather =
    R"({"name": "get_weather", "description": "Weather in a city", "cache_control":
        {"type": "ephemeral"}, "input_schema": {"type": "object", "properties": {"city":
        {"type": "string"}}, "required": ["city"]}})";

Result<ChatRequest> parse(const std::string& fields) {
  return parse_messages_request(R"({"max_tokens": 8, )" + fields + "}");
}

std::string with_tools(const std::string& fields) {
  return std::string(R"("tools": [)") + kWeather + "], " + fields;
}

const std::string kHi = R"("messages": [{"role": "user", "content": "hi"}])";

TEST(MessagesTools, ToolsAndToolChoiceAreTheChatRoutes) {
  auto plain = parse(with_tools(kHi));
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_EQ(plain->tool_choice, ToolChoiceMode::kAuto);
  EXPECT_TRUE(plain->parallel_tool_calls);
  ASSERT_EQ(plain->tools.size(), 1u);
  EXPECT_EQ(plain->tools[0].name, "get_weather");
  EXPECT_FALSE(plain->tools[0].strict);
  // The template sees the chat form of the tool, the schema as given.
  EXPECT_EQ(json::parse(plain->tools_json),
            json::parse(R"([{"type": "function", "function": {"name": "get_weather",
                "description": "Weather in a city", "parameters": {"type": "object",
                "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])"));

  auto any = parse(with_tools(kHi + R"(, "tool_choice": {"type": "any",
                                         "disable_parallel_tool_use": true})"));
  ASSERT_TRUE(any.ok()) << any.status().to_string();
  EXPECT_EQ(any->tool_choice, ToolChoiceMode::kRequired);
  EXPECT_FALSE(any->parallel_tool_calls);

  auto named = parse(with_tools(kHi + R"(, "tool_choice": {"type": "tool", "name":
                                           "get_weather", "disable_parallel_tool_use": false})"));
  ASSERT_TRUE(named.ok()) << named.status().to_string();
  EXPECT_EQ(named->tool_choice, ToolChoiceMode::kNamed);
  EXPECT_EQ(named->tool_choice_name, "get_weather");
  EXPECT_TRUE(named->parallel_tool_calls);

  auto none = parse(with_tools(kHi + R"(, "tool_choice": {"type": "none"})"));
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_EQ(none->tool_choice, ToolChoiceMode::kNone);
  EXPECT_TRUE(none->tools_json.empty());  // the template does not see them

  auto strict = parse(R"("tools": [{"name": "f", "strict": true, "input_schema":
                         {"type": "object"}}], )" +
                      kHi);
  ASSERT_TRUE(strict.ok()) << strict.status().to_string();
  EXPECT_TRUE(strict->tools[0].strict);
}

TEST(MessagesTools, ToolUseAndToolResultBlocksAreTheChatHistory) {
  auto r = parse(with_tools(R"("messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": [
          {"type": "thinking", "thinking": "Ask the tool.", "signature": ""},
          {"type": "text", "text": "Checking."},
          {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
           "input": {"city": "Paris"}},
          {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Nice"}}]},
      {"role": "user", "content": [
          {"type": "text", "text": "before"},
          {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Sunny"},
          {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
           "content": [{"type": "text", "text": "No"}, {"type": "text", "text": "data"}]},
          {"type": "text", "text": "Thanks"}]},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_3",
                                         "name": "get_weather", "input": {}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_3"}]}])"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const json want = json::parse(R"([
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": "Checking.", "reasoning_content": "Ask the tool.",
       "tool_calls": [
          {"id": "toolu_1", "type": "function",
           "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
          {"id": "toolu_2", "type": "function",
           "function": {"name": "get_weather", "arguments": {"city": "Nice"}}}]},
      {"role": "user", "content": "before"},
      {"role": "tool", "tool_call_id": "toolu_1", "content": "Sunny"},
      {"role": "tool", "tool_call_id": "toolu_2", "content": "No data"},
      {"role": "user", "content": "Thanks"},
      {"role": "assistant", "content": null, "tool_calls": [
          {"id": "toolu_3", "type": "function",
           "function": {"name": "get_weather", "arguments": {}}}]},
      {"role": "tool", "tool_call_id": "toolu_3", "content": ""}])");
  EXPECT_EQ(json::parse(r->messages_json), want) << r->messages_json;
}

TEST(MessagesTools, RefusedByName) {
  const std::string ok_tool = R"({"name": "f", "input_schema": {"type": "object"}})";
  const struct {
    std::string fields;
    std::string needle;
  } cases[] = {
      {R"("tools": [{"type": "web_search_20250305", "name": "web_search"}], )" + kHi,
       "server tool 'web_search_20250305'"},
      {R"("tools": [{"name": "f"}], )" + kHi, "tools[0].input_schema"},
      {R"("tools": [{"input_schema": {"type": "object"}}], )" + kHi, "tools[0].name"},
      {R"("tools": [{"name": "f", "input_schema": {}, "defer_loading": true}], )" + kHi,
       "tools[0].defer_loading"},
      {R"("tools": [{"name": "f", "input_schema": {}, "input_examples": [{"a": 1}]}], )" + kHi,
       "tools[0].input_examples"},
      {R"("tools": [{"name": "f", "input_schema": {}, "allowed_callers": ["code"]}], )" + kHi,
       "tools[0].allowed_callers"},
      {R"("tools": [{"name": "f", "input_schema": {}, "color": "red"}], )" + kHi, "tools[0].color"},
      {R"("tools": [{"name": "f", "input_schema": {}, "strict": "yes"}], )" + kHi,
       "tools[0].strict"},
      {R"("tools": {"name": "f"}, )" + kHi, "'tools'"},
      {R"("tools": [)" + ok_tool + R"(], "tool_choice": "any", )" + kHi, "'tool_choice'"},
      {R"("tools": [)" + ok_tool + R"(], "tool_choice": {"type": "some"}, )" + kHi,
       "tool_choice.type"},
      {R"("tools": [)" + ok_tool + R"(], "tool_choice": {"type": "tool"}, )" + kHi,
       "tool_choice.name"},
      {R"("tools": [)" + ok_tool + R"(], "tool_choice": {"type": "tool", "name": "g"}, )" + kHi,
       "'g'"},
      {R"("tools": [)" + ok_tool + R"(], "tool_choice": {"type": "none",
          "disable_parallel_tool_use": true}, )" +
           kHi,
       "tool_choice.disable_parallel_tool_use"},
      {R"("tools": [)" + ok_tool + R"(], "tool_choice": {"type": "any", "name": "f"}, )" + kHi,
       "tool_choice.name"},
      {R"("tool_choice": {"type": "any"}, )" + kHi, "tools"},
      // Blocks in the wrong turn, and malformed ones.
      {R"("messages": [{"role": "user", "content": [{"type": "tool_use", "id": "a",
          "name": "f", "input": {}}]}])",
       "'messages[0].content[0]' is a 'tool_use' block, which belongs in an assistant turn"},
      {R"("messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content":
          [{"type": "tool_result", "tool_use_id": "a"}]}, {"role": "user", "content": "x"}])",
       "'messages[1].content[0]' is a 'tool_result' block, which belongs in a user turn"},
      {R"("messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content":
          [{"type": "tool_use", "id": "a", "name": "f", "input": "x"}]},
          {"role": "user", "content": "x"}])",
       "messages[1].content[0].input"},
      {R"("messages": [{"role": "user", "content": [{"type": "tool_result"}]}])",
       "messages[0].content[0].tool_use_id"},
      {R"("messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id":
          "a", "content": [{"type": "image"}]}]}])",
       "messages[0].content[0].content[0]"},
      {R"("messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}])",
       "'image' (messages[0].content[0])"},
  };
  for (const auto& c : cases) {
    auto r = parse(c.fields);
    ASSERT_FALSE(r.ok()) << c.fields;
    EXPECT_NE(r.status().message().find(c.needle), std::string::npos)
        << c.needle << " not in: " << r.status().message();
  }
}

TEST(MessagesTools, ToolUseIdsFromCallIds) {
  EXPECT_EQ(anthropic::tool_use_id("call_0a1b"), "toolu_0a1b");
  EXPECT_EQ(anthropic::tool_use_id("x9"), "toolu_x9");
}

}  // namespace
}  // namespace sgl::server
