// POST /v1/messages bodies (the Anthropic Messages API) -> the chat request the chat route
// runs: `system` becomes the first message, content blocks chat messages (anthropic_content.h:
// text, thinking as reasoning_content, tool_use / tool_result as tool calls and `tool` messages),
// `tools` and `tool_choice` the chat route's, `stop_sequences` the stop strings, `thinking` the
// template's enable_thinking (its budget_tokens a cap on the reasoning's tokens),
// `output_config` the response_format and reasoning effort; fields the reply cannot carry or
// features not built (server tools, images) are refused by name (kUnimplemented /
// kInvalidArgument), never ignored. Other fields pass through with the chat
// route's meaning (SGLang's extensions such as min_p or ignore_eos).
#pragma once

#include <string_view>

#include "core/status.h"
#include "server/openai_types.h"

namespace sgl::server {

Result<ChatRequest> parse_messages_request(std::string_view body,
                                           const SamplingInput& defaults = {});

}  // namespace sgl::server
