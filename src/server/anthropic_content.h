// NOTE: internal to src/server/*.cpp (it exposes nlohmann::ordered_json). The Messages request's
// conversation and tools in the chat request's terms, as SGLang translates them: custom tools
// ({name, description, input_schema}) as function tools, tool_choice (auto / any / tool / none,
// disable_parallel_tool_use) as tool_choice and parallel_tool_calls, and each message's content
// blocks as chat messages (text joined, thinking as reasoning_content, tool_use blocks an
// assistant's tool_calls, tool_result blocks `tool` messages).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace sgl::server::anthropic {

// Sets the chat body's tools, tool_choice and parallel_tool_calls from the Messages request `o`.
// Server tools (web search, code execution, ...) and tool features this server lacks
// (defer_loading, input_examples, allowed_callers) are refused by name, never dropped.
Status translate_tools(const nlohmann::ordered_json& o, nlohmann::ordered_json& chat);

// Appends Messages message `m` (messages[`index`]) to the chat `messages`: its text blocks
// joined into the content; an assistant's thinking blocks its reasoning_content (templates that
// show earlier thinking read it) and its tool_use blocks its tool_calls (content null without
// text); a user's tool_result blocks `tool` messages in their place, text before a result a user
// message before it. Other block types are refused by name.
Status append_message(const nlohmann::ordered_json& m, size_t index,
                      nlohmann::ordered_json& messages);

// The tool_use block id of chat tool call `call_id` ("call_<hex>" -> "toolu_<hex>").
std::string tool_use_id(const std::string& call_id);

}  // namespace sgl::server::anthropic
