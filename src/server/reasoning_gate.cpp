// The reasoning gate of a request's grammar (reasoning_gate.h).
#include "server/reasoning_gate.h"

#include <algorithm>
#include <limits>
#include <string>

#include "function_call/think_parser.h"

namespace sgl::server {
namespace {

std::vector<int32_t> encode_text(const ServerContext& ctx, std::string_view text) {
  tokenizer::EncodeOptions encode;
  encode.add_special_tokens = false;
  return ctx.tokenizer.encode(text, encode);
}

// Waits for the reasoning's closing tag as the served tokenizer writes it.
grammar::ReasoningGate gate_until(const ServerContext& ctx, std::string_view end) {
  grammar::ReasoningGate gate;
  gate.end_ids = encode_text(ctx, end);
  return gate;
}

constexpr const char* kNeedsTags =
    "needs the server started with a --reasoning-parser that reads its reasoning between tags "
    "(qwen3, qwen3-thinking, deepseek-r1, mistral)";

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
    return invalid_argument(std::string("require_reasoning ") + kNeedsTags);
  }
  return gate_until(ctx, tags->end);
}

grammar::ReasoningGate with_thinking_budget(const ServerContext& ctx, grammar::ReasoningGate gate,
                                            int64_t budget) {
  gate.max_tokens =
      static_cast<int32_t>(std::clamp<int64_t>(budget, 0, std::numeric_limits<int32_t>::max()));
  gate.budget_end_ids = encode_text(ctx, "\n");
  gate.budget_end_ids.insert(gate.budget_end_ids.end(), gate.end_ids.begin(), gate.end_ids.end());
  return gate;
}

Result<grammar::ReasoningGate> generate_budget_gate(const ServerContext& ctx,
                                                    const std::vector<int32_t>& prompt_ids,
                                                    bool require_reasoning, int64_t budget) {
  const std::optional<function_call::ThinkTags> tags =
      function_call::think_tags(ctx.info.reasoning_parser);
  if (!tags) return invalid_argument(std::string("max_thinking_tokens ") + kNeedsTags);
  grammar::ReasoningGate gate = gate_until(ctx, tags->end);
  const std::optional<int32_t> start = ctx.tokenizer.token_to_id(tags->start);
  if (!require_reasoning) {
    if (!start) {
      return invalid_argument("max_thinking_tokens needs the reasoning's opening tag " +
                              std::string(tags->start) +
                              " to be one token of the served vocabulary");
    }
    // The prompt's last opening tag after its last closing one leaves the reasoning open.
    const auto last_start = std::find(prompt_ids.rbegin(), prompt_ids.rend(), *start);
    const auto last_end = std::search(prompt_ids.rbegin(), prompt_ids.rend(), gate.end_ids.rbegin(),
                                      gate.end_ids.rend());
    const bool open = last_start != prompt_ids.rend() && last_start < last_end;
    if (!open) gate.start_id = *start;
  }
  return with_thinking_budget(ctx, std::move(gate), budget);
}

}  // namespace sgl::server
