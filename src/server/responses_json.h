// POST /v1/responses bodies (the OpenAI Responses API) -> the chat request the chat route runs:
// `instructions` becomes a system message, `input` (a string, or message items whose content is
// a string or input_text / output_text parts; function_call and function_call_output items as the
// assistant's tool calls and the tool's replies) the messages, `max_output_tokens` max_tokens,
// function `tools` the chat route's tools (with --tool-call-parser, calls come back as
// function_call output items). With --reasoning-parser the thinking comes back as a reasoning
// item; `reasoning.effort` "none" turns thinking off and any other level turns it on (the
// template's enable_thinking; levels reach it as reasoning_effort).
// `include: ["message.output_text.logprobs"]` (with `top_logprobs`) asks for the output text's
// logprobs; `text.format` json_schema / json_object the chat route's response_format. What needs
// features not built (stored responses, built-in tools, reasoning summaries, images, other
// include values) is refused by name, never ignored; other
// fields pass through with the chat route's meaning (SGLang's extensions such as top_k or stop).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "server/openai_types.h"
#include "server/response_store.h"

namespace sgl::server {

struct ResponsesRequest {
  ChatRequest chat;
  // Echoed in the response object.
  std::optional<std::string> instructions;
  std::optional<int64_t> max_output_tokens;
  std::string metadata_json = "{}";  // an object of strings
  std::optional<std::string> user;
  std::string tools_json = "[]";                              // as given, echoed
  std::string tool_choice_json = "\"auto\"";                  // as given, echoed
  std::optional<std::string> reasoning_effort;                // reasoning.effort, echoed
  std::string text_json = R"({"format": {"type": "text"}})";  // text.format as given, echoed
  // With --enable-response-store: whether to keep the response, the previous one it continues
  // (echoed; empty: none) and its conversation (null: none), and this request's input as
  // Responses input items, which the stored response's own turn starts with.
  bool store = false;
  // background (with store): the response runs without the connection, which gets it queued;
  // GET /v1/responses/{id} shows it as it goes (server/background_responses.h).
  bool background = false;
  std::string previous_response_id;
  std::shared_ptr<const ConversationTurn> previous_turn;
  std::string input_items_json;
  size_t stored_items = 0;  // how many items of the conversation came from the previous response
};

// `store`: the server's response store (--enable-response-store), which `store` and
// `previous_response_id` need (null: both refused); an unknown previous_response_id is kNotFound.
Result<ResponsesRequest> parse_responses_request(std::string_view body,
                                                 const SamplingInput& defaults = {},
                                                 const ResponseStore* store = nullptr);

}  // namespace sgl::server
