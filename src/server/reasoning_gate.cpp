// The reasoning gate of a request's grammar (reasoning_gate.h).
#include "server/reasoning_gate.h"

#include <string>

#include "function_call/think_parser.h"

namespace sgl::server {
namespace {

bool reads_think_tags(const std::string& reasoning_parser) {
  return !reasoning_parser.empty() && reasoning_parser != "gpt-oss";
}

// Waits for </think> as the served tokenizer writes it.
grammar::ReasoningGate gate_until_think_end(const ServerContext& ctx) {
  tokenizer::EncodeOptions encode;
  encode.add_special_tokens = false;
  return {.end_ids = ctx.tokenizer.encode(function_call::kThinkEnd, encode), .start_id = -1};
}

}  // namespace

grammar::ReasoningGate chat_reasoning_gate(const ServerContext& ctx,
                                           const function_call::OutputParserOptions& parser) {
  if (!reads_think_tags(parser.reasoning_parser)) return {};
  grammar::ReasoningGate gate = gate_until_think_end(ctx);
  if (!function_call::starts_in_reasoning(parser)) {
    const std::optional<int32_t> start = ctx.tokenizer.token_to_id(function_call::kThinkStart);
    if (!start) return {};
    gate.start_id = *start;
  }
  return gate;
}

Result<grammar::ReasoningGate> required_reasoning_gate(const ServerContext& ctx) {
  if (!reads_think_tags(ctx.info.reasoning_parser)) {
    return invalid_argument(
        "require_reasoning needs the server started with a --reasoning-parser that reads "
        "<think>...</think> (qwen3, qwen3-thinking, deepseek-r1)");
  }
  return gate_until_think_end(ctx);
}

}  // namespace sgl::server
