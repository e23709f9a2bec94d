// The chat routes' shared preparation (chat_submit.h).
#include "server/chat_submit.h"

#include <chrono>
#include <string>

#include "server/engine_request.h"
#include "server/reasoning_gate.h"
#include "server/routed_experts_json.h"
#include "server/tool_choice.h"
#include "tokenizer/chat_template/json_value.h"

namespace sgl::server {
namespace {

// A render that takes longer is stopped (templates are untrusted code from model files).
constexpr auto kChatTemplateRenderTimeout = std::chrono::seconds(10);

// Renders the conversation with the chat template, within the render budget; stops early once
// `cancelled` (the client went away).
Result<std::string> render_prompt(const ServerContext& ctx, const ChatRequest& req,
                                  const std::atomic<bool>& cancelled) {
  tokenizer::ChatTemplateInputs inputs;
  SGL_ASSIGN_OR_RETURN(inputs.messages, tokenizer::jinja::value_from_json(req.messages_json));
  if (!req.tools_json.empty()) {
    SGL_ASSIGN_OR_RETURN(inputs.tools, tokenizer::jinja::value_from_json(req.tools_json));
  }
  if (!req.template_kwargs_json.empty()) {
    SGL_ASSIGN_OR_RETURN(tokenizer::jinja::Value extra,
                         tokenizer::jinja::value_from_json(req.template_kwargs_json));
    if (extra.is_dict()) inputs.extra_context = extra.dict_data();
  }
  // --default-chat-template-kwargs: what the request left unset (SGLang's setdefault). Read per
  // render: templates may change the values they get, so requests share none.
  if (!ctx.info.default_chat_template_kwargs.empty()) {
    SGL_ASSIGN_OR_RETURN(tokenizer::jinja::Value defaults,
                         tokenizer::jinja::value_from_json(ctx.info.default_chat_template_kwargs));
    for (const auto& [key, value] : defaults.dict_data().entries()) {
      if (inputs.extra_context.find(key) == nullptr) inputs.extra_context.set(key, value);
    }
  }
  // A continued assistant message follows the opening of the assistant's turn (a request that
  // says add_generation_prompt false with it, as vLLM asks, means the same prompt).
  inputs.add_generation_prompt = req.add_generation_prompt || req.assistant_prefix.has_value();
  inputs.bos_token = ctx.tokenizer.bos_token().value_or("");
  inputs.eos_token = ctx.tokenizer.eos_token().value_or("");
  tokenizer::RenderOptions options;
  options.cancelled = &cancelled;
  options.deadline = std::chrono::steady_clock::now() + kChatTemplateRenderTimeout;
  auto rendered = ctx.chat_template->apply(inputs, options);
  if (!rendered.ok()) {
    return invalid_argument("chat template " + ctx.info.chat_template_origin + ": " +
                            rendered.status().message());
  }
  return rendered;
}

}  // namespace

Status check_chat_template(const ServerContext& ctx) {
  if (ctx.chat_template != nullptr) return Status::ok_status();
  return invalid_argument(
      "the model has no chat template; start the server with --chat-template FILE");
}

Result<std::vector<int32_t>> chat_prompt_ids(const ServerContext& ctx, const ChatRequest& req,
                                             const std::atomic<bool>& cancelled,
                                             std::string* prompt) {
  if (req.input_ids) {
    // Given ids stand for the rendering; their text (special tokens kept) tells the output
    // parsers how the prompt ends, as a rendered prompt would.
    SGL_RETURN_IF_ERROR(check_prompt_ids(ctx, *req.input_ids));
    tokenizer::DecodeOptions decode;
    decode.skip_special_tokens = false;
    *prompt = ctx.tokenizer.decode(*req.input_ids, decode);
    return *req.input_ids;
  }
  SGL_ASSIGN_OR_RETURN(*prompt, render_prompt(ctx, req, cancelled));
  // continue_final_message: the prompt ends with the assistant's text (the output parsers see
  // it too: a reasoning block it opened is still open).
  if (req.assistant_prefix) *prompt += *req.assistant_prefix;
  // The completions routes' limit on text to tokenize, on the rendered conversation.
  SGL_RETURN_IF_ERROR(check_text_length(ctx, prompt->size(), "messages"));
  // The template writes the special tokens itself (transformers' apply_chat_template).
  tokenizer::EncodeOptions encode;
  encode.add_special_tokens = false;
  return ctx.tokenizer.encode(*prompt, encode);
}

Result<SubmittedChat> submit_chat(ServerContext& ctx, const ChatRequest& req,
                                  const std::atomic<bool>& cancelled) {
  std::string prompt;
  SGL_ASSIGN_OR_RETURN(const std::vector<int32_t> ids,
                       chat_prompt_ids(ctx, req, cancelled, &prompt));
  SGL_RETURN_IF_ERROR(
      check_routed_experts(ctx.info, req.sglext.routed_experts, static_cast<int64_t>(ids.size())));
  const function_call::OutputParserOptions parser = output_parser_options(ctx, req, prompt);
  std::vector<ChoicePlan> plans;
  std::shared_ptr<const grammar::CompiledGrammar> tool_grammar;  // the same for every choice
  // A grammar holds the answer after the reasoning, except tool_choice auto's, which describes
  // the reasoning itself.
  const grammar::ReasoningGate gate = grammar_leaves_reasoning(ctx, req, parser)
                                          ? chat_reasoning_gate(ctx, parser)
                                          : grammar::ReasoningGate{};
  // The thinking budget, where the reasoning is read between tags: the engine forces the close.
  const grammar::ReasoningGate budget_gate =
      req.max_reasoning_tokens && !gate.empty()
          ? with_thinking_budget(ctx, gate, *req.max_reasoning_tokens)
          : grammar::ReasoningGate{};
  for (int64_t j = 0; j < req.sampling.n; ++j) {
    SGL_ASSIGN_OR_RETURN(engine::GenerateRequest request,
                         build_engine_request(ctx, req.sampling, ids, j, std::nullopt));
    if (j == 0) {
      SGL_ASSIGN_OR_RETURN(tool_grammar,
                           tool_choice_grammar(ctx, req, parser, request.grammar != nullptr));
    }
    if (tool_grammar) request.grammar = tool_grammar;
    SGL_RETURN_IF_ERROR(apply_routing(ctx, req.routing, 0, request));
    const bool grammar_holds_reasoning = tool_grammar && req.tool_choice == ToolChoiceMode::kAuto;
    const bool budget_forced = budget_gate.has_budget() && !grammar_holds_reasoning;
    if (budget_forced) {
      request.reasoning_gate = budget_gate;
    } else if (request.grammar && !grammar_holds_reasoning) {
      request.reasoning_gate = gate;
    }
    ChoicePlan plan{std::move(request), choice_options(req.sampling, req.logprobs)};
    plan.options.parser = parser;
    // Where the engine cannot force the close (no tags, gpt-oss's channels, a grammar over the
    // reasoning), the reply ends at the budget instead.
    if (!budget_forced) plan.options.max_reasoning_tokens = req.max_reasoning_tokens;
    plan.options.single_tool_call = !req.parallel_tool_calls;
    // The parsers read their markers from the text (some are special tokens).
    if (function_call::needs_special_tokens(parser)) {
      plan.options.skip_special_tokens = false;
    }
    plan.request.return_logprob = req.logprobs;
    plan.request.top_logprobs_num = static_cast<int32_t>(req.top_logprobs);
    plan.request.return_hidden_states = req.return_hidden_states != HiddenStatesMode::kNone;
    plan.request.return_routed_experts = req.sglext.routed_experts.asked;
    plans.push_back(std::move(plan));
  }
  SubmittedChat out;
  out.prompt_tokens = static_cast<int64_t>(ids.size());
  if (req.return_prompt_token_ids || req.return_token_ids) out.prompt_ids = ids;
  out.reasoning = !parser.reasoning_parser.empty();
  out.tool_calls = !parser.tool_call_parser.empty();
  SGL_ASSIGN_OR_RETURN(out.choices,
                       submit_choices(ctx, std::move(plans), req.routing.routed_dp_rank));
  return out;
}

}  // namespace sgl::server
