// The reasoning gate of a request's grammar (reasoning_gate.h).
#include "server/reasoning_gate.h"

#include <string>

#include "function_call/think_parser.h"

namespace sgl::server {
namespace {

// Waits for the reasoning's closing tag as the served tokenizer writes it.
grammar::ReasoningGate gate_until(const ServerContext& ctx, std::string_view end) {
  tokenizer::EncodeOptions encode;
  encode.add_special_tokens = false;
  return {.end_ids = ctx.tokenizer.encode(end, encode), .start_id = -1};
}

}  // namespace

grammar::ReasoningGate chat_reasoning_gate(const ServerContext& ctx,
                                           const function_call::OutputParserOptions& parser) {
  const std::optional<function_call::ThinkTags> tags =
      function_call::think_tags(parser.reasoning_parser);
  if (!tags) return {};
  grammar::ReasoningGate gate = gate_until(ctx, tags->end);
  if (!function_call::starts_in_reasoning(parser)) {
    const std::optional<int32_t> start = ctx.tokenizer.token_to_id(tags->start);
    if (!start) return {};
    gate.start_id = *start;
  }
  return gate;
}

Result<grammar::ReasoningGate> required_reasoning_gate(const ServerContext& ctx) {
  const std::optional<function_call::ThinkTags> tags =
      function_call::think_tags(ctx.info.reasoning_parser);
  if (!tags) {
    return invalid_argument(
        "require_reasoning needs the server started with a --reasoning-parser that reads its "
        "reasoning between tags (qwen3, qwen3-thinking, deepseek-r1, mistral)");
  }
  return gate_until(ctx, tags->end);
}

}  // namespace sgl::server
