// JSON request parsing for every endpoint, one parser per request (the typed field readers are
// request_json's, the sampling fields' sampling_json's).
#include "server/openai_json.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "sampling/sampler.h"
#include "server/request_json.h"
#include "server/routing_json.h"
#include "server/sampling_json.h"
#include "server/structured_output_json.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;
using request_json::asks_nothing;
using request_json::dump;
using request_json::field_error;
using request_json::find;
using request_json::find_mutable;
using request_json::LimitedField;
using request_json::parse_object;
using request_json::read;
using request_json::read_prompts;
using request_json::reject_limited;
using request_json::to_ids;
using sampling_json::check_min_tokens;
using sampling_json::read_max_tokens;
using sampling_json::read_sampling;

// /generate's session_params (SGLang's): a request of an open session, one prompt and n 1.
Status read_session_params(const json& o, GenerateInput& r) {
  constexpr const char* kKey = "session_params";
  const json* v = find(o, kKey);
  if (!v || asks_nothing(*v)) return Status::ok_status();
  if (!v->is_object()) return field_error(kKey, "must be an object");
  SessionParams p;
  SGL_RETURN_IF_ERROR(read(*v, "id", p.id));
  if (p.id.empty()) return field_error("session_params.id", "must name an open session");
  SGL_RETURN_IF_ERROR(read(*v, "rid", p.rid));
  std::optional<int64_t> offset;
  SGL_RETURN_IF_ERROR(read(*v, "offset", offset));
  p.offset = offset.value_or(0);
  for (const auto& [key, value] : v->items()) {
    if (key != "id" && key != "rid" && key != "offset" && key != "replace" &&
        key != "drop_previous_output") {
      return field_error("session_params." + key, "is not a field of session_params");
    }
  }
  SGL_RETURN_IF_ERROR(read(*v, "replace", p.replace));
  SGL_RETURN_IF_ERROR(read(*v, "drop_previous_output", p.drop_previous_output));
  if (r.batch || r.sampling.n != 1) {
    return field_error(kKey, "takes one prompt and n 1 (a session's request continues one)");
  }
  r.session = std::move(p);
  return Status::ok_status();
}

// Outside the sampling fields: /generate's top level, and the OpenAI routes' extra fields (SGLang's
// GenerateReqInput, ChatCompletionRequest and CompletionRequest; a field one route lacks is
// refused on the others too).
constexpr const char* kNoMultimodal = "multimodal inputs are not implemented";
constexpr const char* kNoReplyExtra = "this extra reply content is not implemented";
constexpr const char* kNoDisaggregation = "prefill-decode disaggregation is not implemented";
constexpr request_json::RefusedField kUnsupportedRequest[] = {
    {"lora_id", "is the server's internal id: name the adapter with lora_path"},
    {"image_data", kNoMultimodal},
    {"audio_data", kNoMultimodal},
    {"video_data", kNoMultimodal},
    {"images_config", kNoMultimodal},
    {"video_config", kNoMultimodal},
    {"mm_processor_kwargs", kNoMultimodal},
    {"max_dynamic_patch", kNoMultimodal},
    {"min_dynamic_patch", kNoMultimodal},
    {"image_max_dynamic_patch", kNoMultimodal},
    {"video_max_dynamic_patch", kNoMultimodal},
    {"use_audio_in_video", kNoMultimodal},
    {"mm_hashes", kNoMultimodal},
    {"mm_content_hashes", kNoMultimodal},
    {"encoder_urls", kNoMultimodal},
    {"input_embeds", "input embeddings are not implemented"},
    {"positional_embed_overrides", "positional embedding overrides are not implemented"},
    {"return_meta_info", kNoReplyExtra},
    {"return_input_ids_in_sglext", kNoReplyExtra},
    {"return_output_ids_in_sglext", kNoReplyExtra},
    {"return_sampling_mask", kNoReplyExtra},
    {"sampling_logprobs_mode", kNoReplyExtra},
    {"return_flat_raw_top_logprobs", kNoReplyExtra},
    {"return_flat_raw_output_top_logprobs", kNoReplyExtra},
    {"return_flat_raw_top_logprobs_b64", kNoReplyExtra},
    {"return_bytes", kNoReplyExtra},
    {"return_entropy", kNoReplyExtra},
    {"return_indexer_topk", kNoReplyExtra},
    {"session_id",
     "radix-cache sessions are not implemented (session_params on /generate works as SGLang's "
     "sessions)"},
    {"watermark", "watermarking is not implemented"},
    {"multi_item_delimiter_indices", "multi-item scoring is not implemented"},
    {"token_indices_to_pool", "pooling chosen tokens is not implemented"},
    {"kv_hints", "KV placement hints are not implemented"},
    {"bootstrap_host", kNoDisaggregation},
    {"bootstrap_port", kNoDisaggregation},
    {"bootstrap_room", kNoDisaggregation},
    {"bootstrap_pair_key", kNoDisaggregation},
    {"disagg_prefill_dp_rank", kNoDisaggregation},
    {"decode_tp_size", kNoDisaggregation},
};
// /generate's fields the OpenAI routes refuse.
constexpr request_json::RefusedField kGenerateOnly[] = {
    {"session_params", "sessions on this route are not implemented (/generate's are)"},
    {"max_thinking_tokens",
     "a per-request thinking budget on this route is not implemented (/generate's "
     "max_thinking_tokens and the Messages API's thinking.budget_tokens are)"},
};

constexpr const char* kNoFunctions = "function calling is not implemented yet";
// The chat schema's (OpenAI's) fields for features not built.
const LimitedField kLimitedChat[] = {
    {"audio", {}, "audio output is not implemented"},
    {"web_search_options", {}, "web search is not available"},
    {"verbosity", {"medium"}, "verbosity control is not implemented"},
    {"store", {}, "chat completions are not stored"},
    {"service_tier", {"auto", "default"}, "there is one service tier"},
    {"functions", {}, kNoFunctions},
    {"function_call", {"none", "auto"}, kNoFunctions},
};

// modalities: text only.
Status check_modalities(const json& o) {
  const json* v = find(o, "modalities");
  if (!v) return Status::ok_status();
  if (!v->is_array()) return field_error("modalities", "must be a list");
  for (const json& m : *v) {
    if (m != "text") return unimplemented("'modalities' other than text are not supported");
  }
  return Status::ok_status();
}

// /generate's token_ids_logprob: one list of ids for every prompt, or (a batch) one list per
// prompt; at most sampling::kMaxTokenIdsLogprob ids a list. null: not asked.
Status read_token_ids_logprob(const json& o, size_t prompts,
                              std::optional<std::vector<std::vector<int32_t>>>& out) {
  constexpr const char* kKey = "token_ids_logprob";
  const json* v = find(o, kKey);
  if (!v || v->is_null()) return Status::ok_status();
  if (!v->is_array()) return field_error(kKey, "must be a list of token ids");
  if (v->empty()) return Status::ok_status();  // SGLang reads [] as not given
  std::vector<std::vector<int32_t>> lists;
  if (v->front().is_array()) {
    if (v->size() != prompts) {
      return field_error(kKey, "lists (" + std::to_string(v->size()) +
                                   ") must be one per prompt (" + std::to_string(prompts) + ")");
    }
    for (const json& e : *v) SGL_RETURN_IF_ERROR(to_ids(e, kKey, lists.emplace_back()));
  } else {
    SGL_RETURN_IF_ERROR(to_ids(*v, kKey, lists.emplace_back()));
  }
  for (const std::vector<int32_t>& ids : lists) {
    if (static_cast<int64_t>(ids.size()) > sampling::kMaxTokenIdsLogprob) {
      return field_error(kKey, "may list at most " + std::to_string(sampling::kMaxTokenIdsLogprob) +
                                   " token ids, got " + std::to_string(ids.size()));
    }
  }
  out = std::move(lists);
  return Status::ok_status();
}

// stream, and stream_options' include_usage (a last chunk with the usage) and
// continuous_usage_stats (the usage so far in every chunk; without include_usage no last
// usage chunk, as SGLang).
Status read_stream(const json& o, bool& stream, bool& include_usage, bool& continuous_usage) {
  SGL_RETURN_IF_ERROR(read(o, "stream", stream));
  if (const json* options = find(o, "stream_options")) {
    if (!options->is_object()) return field_error("stream_options", "must be an object");
    for (const auto& [key, out] : {std::pair{"include_usage", &include_usage},
                                   std::pair{"continuous_usage_stats", &continuous_usage}}) {
      const json* v = find(*options, key);
      if (!v) continue;
      if (!v->is_boolean()) {
        return field_error(std::string("stream_options.") + key, "must be a boolean");
      }
      *out = v->get<bool>();
    }
  }
  return Status::ok_status();
}

// SGLang's return_routed_experts and routed_experts_start_len.
Status read_routed_experts(const json& o, RoutedExpertsInput& out) {
  SGL_RETURN_IF_ERROR(read(o, "return_routed_experts", out.asked));
  SGL_RETURN_IF_ERROR(read(o, "routed_experts_start_len", out.start_len));
  if (out.start_len < 0) return field_error("routed_experts_start_len", "must be >= 0");
  return Status::ok_status();
}

// The OpenAI routes' fields answered in sglext.
Status read_sglext_fields(const json& o, SglextFields& out) {
  SGL_RETURN_IF_ERROR(read_routed_experts(o, out.routed_experts));
  SGL_RETURN_IF_ERROR(read(o, "return_spec_tokens_details", out.spec_tokens_details));
  return read(o, "return_cached_tokens_details", out.cached_tokens_details);
}

// SGLang's return_hidden_states: a boolean or "last".
Status read_hidden_states_mode(const json& o, HiddenStatesMode& out) {
  const json* v = find(o, "return_hidden_states");
  if (!v || v->is_null()) return Status::ok_status();
  if (v->is_boolean()) {
    out = v->get<bool>() ? HiddenStatesMode::kAll : HiddenStatesMode::kNone;
    return Status::ok_status();
  }
  if (v->is_string() && v->get_ref<const std::string&>() == "last") {
    out = HiddenStatesMode::kLast;
    return Status::ok_status();
  }
  return field_error("return_hidden_states", "must be a boolean or \"last\"");
}

// tools, tool_choice and parallel_tool_calls. The tools' parameter schemas must compile; a named
// tool_choice must name one of them. tool_choice accepts the chat form {"type": "function",
// "function": {"name": ...}} and the Responses form {"type": "function", "name": ...}.
Status read_tools(const json& o, ChatRequest& r) {
  const json* tools = find(o, "tools");
  if (tools) {
    if (!tools->is_array()) return field_error("tools", "must be a list");
    if (!tools->empty()) {
      SGL_ASSIGN_OR_RETURN(r.tools, function_call::read_function_tools(dump(*tools)));
    }
  }
  if (const json* choice = find(o, "tool_choice")) {
    if (choice->is_string()) {
      const std::string& mode = choice->get_ref<const std::string&>();
      if (mode == "none") {
        r.tool_choice = ToolChoiceMode::kNone;
      } else if (mode == "auto") {
        r.tool_choice = ToolChoiceMode::kAuto;
      } else if (mode == "required") {
        r.tool_choice = ToolChoiceMode::kRequired;
      } else {
        return field_error("tool_choice", "must be 'none', 'auto', 'required' or an object");
      }
    } else if (choice->is_object()) {
      const json* type = find(*choice, "type");
      const json* function = find(*choice, "function");
      const json* name =
          function && function->is_object() ? find(*function, "name") : find(*choice, "name");
      if (!type || *type != "function" || !name || !name->is_string()) {
        return field_error("tool_choice",
                           "as an object must be {\"type\": \"function\", \"function\": "
                           "{\"name\": ...}}");
      }
      r.tool_choice = ToolChoiceMode::kNamed;
      r.tool_choice_name = name->get<std::string>();
    } else {
      return field_error("tool_choice", "must be 'none', 'auto', 'required' or an object");
    }
  }
  if (r.tool_choice == ToolChoiceMode::kRequired || r.tool_choice == ToolChoiceMode::kNamed) {
    if (r.tools.empty()) return field_error("tool_choice", "needs a non-empty 'tools'");
  }
  if (r.tool_choice == ToolChoiceMode::kNamed &&
      std::none_of(r.tools.begin(), r.tools.end(),
                   [&](const auto& t) { return t.name == r.tool_choice_name; })) {
    return field_error("tool_choice",
                       "names function '" + r.tool_choice_name + "', which is not in 'tools'");
  }
  SGL_RETURN_IF_ERROR(read(o, "parallel_tool_calls", r.parallel_tool_calls));
  if (r.tool_choice != ToolChoiceMode::kNone && !r.tools.empty()) {
    // The template sees the tools a call may name: a named tool_choice shows only that one, as
    // SGLang renders it.
    json shown = json::array();
    for (const json& tool : *tools) {
      const json* function = find(tool, "function");
      const json* name = function ? find(*function, "name") : nullptr;
      if (r.tool_choice != ToolChoiceMode::kNamed || (name && *name == r.tool_choice_name)) {
        shown.push_back(tool);
      }
    }
    r.tools_json = dump(shown);
  }
  return Status::ok_status();
}

// A chat message for the template: content parts joined into one string (text parts only).
Result<json> template_message(const json& m, size_t index) {
  const std::string where = "messages[" + std::to_string(index) + "]";
  if (!m.is_object()) return field_error(where, "must be an object");
  const json* role = find(m, "role");
  if (!role || !role->is_string()) return field_error(where + ".role", "must be a string");
  static const char* kRoles[] = {"system", "user", "assistant", "tool", "developer", "function"};
  if (std::find(std::begin(kRoles), std::end(kRoles), role->get<std::string>()) ==
      std::end(kRoles)) {
    return field_error(where + ".role", "is not a known role: '" + role->get<std::string>() + "'");
  }
  json out = m;
  const auto content = m.find("content");
  if (content == m.end() || content->is_null()) {
    out["content"] = nullptr;
  } else if (content->is_array()) {
    SGL_ASSIGN_OR_RETURN(std::string text,
                         request_json::joined_text(*content, where + ".content", {"text"}));
    out["content"] = std::move(text);
  } else if (!content->is_string()) {
    return field_error(where + ".content", "must be a string, a list of parts or null");
  }
  if (json* calls = find_mutable(out, "tool_calls"); calls != nullptr && calls->is_array()) {
    for (json& call : *calls) {
      if (json* function = call.is_object() ? find_mutable(call, "function") : nullptr;
          function != nullptr && function->is_object() && function->contains("arguments")) {
        (*function)["arguments"] = request_json::template_arguments((*function)["arguments"]);
      }
    }
  }
  return out;
}

// continue_final_message: the final message, the assistant's text the model continues, taken out
// of the conversation `messages` (template messages). SGLang's: the template then opens the
// assistant's turn as for a new one, and this text follows. What the text could not carry on
// (tool calls, reasoning) is refused rather than dropped.
Result<std::string> take_final_assistant_text(json& messages) {
  const std::string where = "messages[" + std::to_string(messages.size() - 1) + "]";
  const json& last = messages.back();
  if (last["role"] != "assistant") {
    return field_error("continue_final_message",
                       "needs the last message to be the assistant's (the text to continue); "
                       "it is " +
                           where + ", role '" + last["role"].get<std::string>() + "'");
  }
  for (const char* key : {"tool_calls", "reasoning_content"}) {
    const json* value = find(last, key);
    if (value && !value->is_null() && !value->empty()) {
      return field_error(where + "." + key,
                         "cannot be continued (continue_final_message continues the text)");
    }
  }
  std::string text = last["content"].is_string() ? last["content"].get<std::string>() : "";
  messages.erase(messages.size() - 1);
  return text;
}

}  // namespace

Result<CompletionRequest> parse_completion_request(std::string_view body,
                                                   const SamplingInput& defaults) {
  SGL_ASSIGN_OR_RETURN(json o, parse_object(body));
  return request_json::parse_completion_object(o, defaults);
}

Result<CompletionRequest> request_json::parse_completion_object(const json& o,
                                                                const SamplingInput& defaults) {
  CompletionRequest r;
  r.sampling = defaults;
  SGL_RETURN_IF_ERROR(read(o, "model", r.model));
  const json* prompt = find(o, "prompt");
  if (!prompt) return field_error("prompt", "is required");
  bool batch = false;
  SGL_RETURN_IF_ERROR(read_prompts(*prompt, "prompt", r.prompts, batch));
  SGL_RETURN_IF_ERROR(read_sampling(o, r.sampling, false));
  SGL_RETURN_IF_ERROR(read_max_tokens(o, "max_tokens", r.sampling));
  // OpenAI's default, unless the server has one.
  if (!r.sampling.max_tokens && !r.sampling.default_max_tokens) r.sampling.max_tokens = 16;
  SGL_RETURN_IF_ERROR(check_min_tokens(r.sampling, false));
  SGL_RETURN_IF_ERROR(read(o, "echo", r.echo));
  SGL_RETURN_IF_ERROR(read(o, "logprobs", r.logprobs));
  if (r.logprobs && (*r.logprobs < 0 || *r.logprobs > kMaxTopLogprobs)) {
    return field_error("logprobs", "must be in [0, " + std::to_string(kMaxTopLogprobs) + "]");
  }
  SGL_RETURN_IF_ERROR(read_stream(o, r.stream, r.include_usage, r.continuous_usage));
  SGL_RETURN_IF_ERROR(routing_json::read_routing(o, std::nullopt, r.routing));
  SGL_RETURN_IF_ERROR(request_json::refuse_fields(o, kUnsupportedRequest));
  SGL_RETURN_IF_ERROR(request_json::refuse_fields(o, kGenerateOnly));
  static constexpr request_json::RefusedField kChatOnly[] = {
      {"return_prompt_token_ids",
       "it is a chat completions field (here return_token_ids lists the prompt's ids too)"}};
  SGL_RETURN_IF_ERROR(request_json::refuse_fields(o, kChatOnly));
  SGL_RETURN_IF_ERROR(read(o, "return_token_ids", r.return_token_ids));
  SGL_RETURN_IF_ERROR(read_hidden_states_mode(o, r.return_hidden_states));
  SGL_RETURN_IF_ERROR(read_sglext_fields(o, r.sglext));
  std::optional<int64_t> best_of;
  SGL_RETURN_IF_ERROR(read(o, "best_of", best_of));
  if (best_of && (*best_of < 1 || *best_of > kMaxChoices)) {
    return field_error("best_of", "must be in [1, " + std::to_string(kMaxChoices) + "]");
  }
  if (best_of && *best_of != r.sampling.n)
    return unimplemented("best_of != n is not supported yet");
  SGL_RETURN_IF_ERROR(read(o, "suffix", r.suffix));
  if (!r.suffix.empty() && std::any_of(r.prompts.begin(), r.prompts.end(),
                                       [](const PromptInput& p) { return !p.is_text; })) {
    return field_error("suffix", "needs text prompts (token ids cannot be joined with it)");
  }
  if (!r.suffix.empty() && r.echo) return field_error("echo", "cannot be combined with 'suffix'");
  SGL_RETURN_IF_ERROR(structured_output_json::read_response_format(o, r.sampling.grammar));
  if (static_cast<int64_t>(r.prompts.size()) * r.sampling.n > kMaxBatchPrompts) {
    return field_error("n",
                       "times the number of prompts exceeds " + std::to_string(kMaxBatchPrompts));
  }
  return r;
}

Result<ChatRequest> parse_chat_request(std::string_view body, const SamplingInput& defaults) {
  SGL_ASSIGN_OR_RETURN(json o, parse_object(body));
  return request_json::parse_chat_object(o, defaults);
}

Status request_json::check_template_kwargs(const json& kwargs, std::string_view field) {
  if (!kwargs.is_object()) return field_error(field, "must be an object");
  // The conversation, its tools and the generation prompt come from the request (SGLang
  // raises on these duplicate keywords): a kwarg would bypass the messages' checks or the
  // output parser's tools. continue_final_message is refused on the request too. (documents,
  // bos_token and eos_token may be overridden, as in transformers.)
  for (const char* own : {"messages", "tools", "add_generation_prompt", "continue_final_message"}) {
    if (kwargs.contains(own)) {
      return field_error(std::string(field) + "." + own,
                         "is set by the request itself, not by a template kwarg");
    }
  }
  // SGLang refuses a template sent with the request (unless --trust-request-chat-template,
  // which sgl.cpp does not have): untrusted template code.
  if (kwargs.contains("chat_template")) {
    return unimplemented("'" + std::string(field) +
                         ".chat_template' is not supported: a chat template comes from "
                         "--chat-template or the tokenizer");
  }
  if (const json* thinking = find(kwargs, "enable_thinking"); thinking && !thinking->is_boolean()) {
    return field_error(std::string(field) + ".enable_thinking", "must be a boolean");
  }
  return Status::ok_status();
}

Result<ChatRequest> request_json::parse_chat_object(const json& o, const SamplingInput& defaults) {
  ChatRequest r;
  r.sampling = defaults;
  SGL_RETURN_IF_ERROR(read(o, "model", r.model));
  const json* messages = find(o, "messages");
  if (!messages || !messages->is_array() || messages->empty()) {
    return field_error("messages", "must be a non-empty list of messages");
  }
  json converted = json::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    SGL_ASSIGN_OR_RETURN(json m, template_message((*messages)[i], i));
    converted.push_back(std::move(m));
  }
  bool continue_final = false;
  SGL_RETURN_IF_ERROR(read(o, "continue_final_message", continue_final));
  if (continue_final) {
    SGL_ASSIGN_OR_RETURN(r.assistant_prefix, take_final_assistant_text(converted));
  }
  r.messages_json = dump(converted);
  if (const json* ids = find(o, "input_ids")) {
    if (!ids->is_array() || ids->empty() || !(*ids)[0].is_number()) {
      return field_error("input_ids", "must be a non-empty list of token ids");
    }
    if (continue_final) {
      return field_error("continue_final_message",
                         "cannot be combined with input_ids (the ids stand for the rendering)");
    }
    SGL_RETURN_IF_ERROR(request_json::to_ids(*ids, "input_ids", r.input_ids.emplace()));
  }

  SGL_RETURN_IF_ERROR(read_tools(o, r));
  json kwargs = json::object();
  if (const json* given = find(o, "chat_template_kwargs")) {
    SGL_RETURN_IF_ERROR(check_template_kwargs(*given, "chat_template_kwargs"));
    kwargs = *given;
  }
  // SGLang's thinking config ({"type": ...}) reaches the template as thinking_mode, which only
  // templates with a thinking mode read.
  if (const json* thinking = find(o, "thinking")) {
    const json* type = thinking->is_object() ? find(*thinking, "type") : nullptr;
    if (!type || !type->is_string()) return field_error("thinking", "must be {\"type\": string}");
    if (!kwargs.contains("thinking_mode")) kwargs["thinking_mode"] = *type;
  }
  // OpenAI's reasoning_effort switches thinking as Responses' reasoning.effort does; so does
  // SGLang's reasoning object: its effort (or reasoning_effort) stands for the top-level one,
  // and enabled (or enable) true turns thinking on.
  const json* effort = find(o, "reasoning_effort");
  std::string effort_field = "reasoning_effort";
  bool enabled = false;
  if (const json* reasoning = find(o, "reasoning")) {
    if (!reasoning->is_object()) return field_error("reasoning", "must be an object");
    for (const char* key : {"effort", "reasoning_effort"}) {
      if (const json* inner = find(*reasoning, key)) {
        effort = inner;
        effort_field = std::string("reasoning.") + key;
        break;
      }
    }
    for (const char* key : {"enabled", "enable"}) {
      if (const json* inner = find(*reasoning, key)) {
        if (!inner->is_boolean()) {
          return field_error(std::string("reasoning.") + key, "must be a boolean");
        }
        enabled = inner->get<bool>();
        break;
      }
    }
  }
  if (effort || enabled) {
    json chat = {{"chat_template_kwargs", std::move(kwargs)}};
    if (effort) {
      SGL_ASSIGN_OR_RETURN(r.thinking,
                           request_json::apply_reasoning_effort(*effort, effort_field, chat));
    } else {
      SGL_RETURN_IF_ERROR(
          request_json::set_template_kwarg(chat, "enable_thinking", true, "reasoning.enabled"));
      r.thinking = true;
    }
    kwargs = std::move(chat["chat_template_kwargs"]);
  }
  if (!kwargs.empty()) {
    r.template_kwargs_json = dump(kwargs);
    if (const json* thinking = find(kwargs, "enable_thinking")) {
      if (!thinking->is_boolean()) {
        return field_error("chat_template_kwargs.enable_thinking", "must be a boolean");
      }
      r.enable_thinking = thinking->get<bool>();
    }
  }
  SGL_RETURN_IF_ERROR(read(o, "separate_reasoning", r.separate_reasoning));
  SGL_RETURN_IF_ERROR(read(o, "stream_reasoning", r.stream_reasoning));
  SGL_RETURN_IF_ERROR(read(o, "add_generation_prompt", r.add_generation_prompt));

  SGL_RETURN_IF_ERROR(read_sampling(o, r.sampling, false));
  SGL_RETURN_IF_ERROR(read_max_tokens(o, "max_tokens", r.sampling));
  SGL_RETURN_IF_ERROR(read_max_tokens(o, "max_completion_tokens", r.sampling));
  SGL_RETURN_IF_ERROR(check_min_tokens(r.sampling, false));
  SGL_RETURN_IF_ERROR(read(o, "logprobs", r.logprobs));
  SGL_RETURN_IF_ERROR(read(o, "top_logprobs", r.top_logprobs));
  if (r.top_logprobs < 0 || r.top_logprobs > kMaxTopLogprobs) {
    return field_error("top_logprobs", "must be in [0, " + std::to_string(kMaxTopLogprobs) + "]");
  }
  if (r.top_logprobs > 0 && !r.logprobs) {
    return field_error("top_logprobs", "requires 'logprobs' to be true");
  }
  SGL_RETURN_IF_ERROR(read_stream(o, r.stream, r.include_usage, r.continuous_usage));
  SGL_RETURN_IF_ERROR(routing_json::read_routing(o, std::nullopt, r.routing));
  SGL_RETURN_IF_ERROR(request_json::refuse_fields(o, kUnsupportedRequest));
  SGL_RETURN_IF_ERROR(request_json::refuse_fields(o, kGenerateOnly));
  SGL_RETURN_IF_ERROR(read(o, "return_prompt_token_ids", r.return_prompt_token_ids));
  SGL_RETURN_IF_ERROR(read(o, "return_token_ids", r.return_token_ids));
  // SGLang's: the ids come with the whole reply only.
  for (const auto& [field, asked] :
       {std::pair{"return_prompt_token_ids", r.return_prompt_token_ids},
        std::pair{"return_token_ids", r.return_token_ids}}) {
    if (asked && r.stream) return field_error(field, "is not supported with streaming");
  }
  SGL_RETURN_IF_ERROR(read_hidden_states_mode(o, r.return_hidden_states));
  SGL_RETURN_IF_ERROR(read_sglext_fields(o, r.sglext));
  SGL_RETURN_IF_ERROR(reject_limited(o, kLimitedChat));
  SGL_RETURN_IF_ERROR(check_modalities(o));
  SGL_RETURN_IF_ERROR(structured_output_json::read_response_format(o, r.sampling.grammar));
  return r;
}

Result<GenerateInput> parse_generate_request(std::string_view body, const SamplingInput& defaults) {
  SGL_ASSIGN_OR_RETURN(json o, parse_object(body));
  GenerateInput r;
  r.sampling = defaults;
  SGL_RETURN_IF_ERROR(request_json::read_text_or_input_ids(o, r.prompts, r.batch).status());
  if (const json* params = find(o, "sampling_params"); params && params->is_array()) {
    // One per prompt (SGLang's list form), each over the defaults, the same n in every one.
    if (params->size() != r.prompts.size()) {
      return field_error("sampling_params", "as a list must hold one object per prompt (" +
                                                std::to_string(r.prompts.size()) + "), got " +
                                                std::to_string(params->size()));
    }
    for (size_t i = 0; i < params->size(); ++i) {
      const json& item = (*params)[i];
      const std::string where = "sampling_params[" + std::to_string(i) + "]";
      if (!item.is_object()) return field_error(where, "must be an object");
      SamplingInput s = defaults;
      if (Status st = sampling_json::read_sampling_params(item, s); !st.ok()) {
        return invalid_argument(where + ": " + st.message());
      }
      if (i > 0 && s.n != r.per_prompt_sampling.front().n) {
        return field_error(where + ".n", "must be the same in every sampling_params entry");
      }
      r.per_prompt_sampling.push_back(std::move(s));
    }
    r.sampling = r.per_prompt_sampling.front();
  } else if (params) {
    if (!params->is_object()) {
      return field_error("sampling_params", "must be an object or a list of one per prompt");
    }
    SGL_RETURN_IF_ERROR(sampling_json::read_sampling_params(*params, r.sampling));
  }
  SGL_RETURN_IF_ERROR(read(o, "stream", r.stream));
  // SGLang's /generate takes custom_logit_processor beside sampling_params: the sampling list
  // applies at its top level too.
  SGL_RETURN_IF_ERROR(sampling_json::refuse_unsupported_sampling(o));
  SGL_RETURN_IF_ERROR(sampling_json::refuse_top_level_sampling(o));
  SGL_RETURN_IF_ERROR(read_token_ids_logprob(o, r.prompts.size(), r.token_ids_logprob));
  SGL_RETURN_IF_ERROR(request_json::refuse_fields(o, kUnsupportedRequest));
  static constexpr request_json::RefusedField kOpenAiOnly[] = {
      {"return_token_ids",
       "it is an OpenAI routes' field (here output_ids are always listed, and "
       "return_prompt_token_ids lists the prompt's)"},
      {"return_cached_tokens_details",
       "it is an OpenAI routes' field (here meta_info.cached_tokens counts them)"},
      {"return_spec_tokens_details",
       "it is an OpenAI routes' field (here meta_info lists the spec_* metrics of a request "
       "that verified drafts)"}};
  SGL_RETURN_IF_ERROR(request_json::refuse_fields(o, kOpenAiOnly));
  for (const char* key : {"return_logprob", "top_logprobs_num", "logprob_start_len"}) {
    if (const json* v = find(o, key); v && v->is_array()) {
      return unimplemented("'" + std::string(key) +
                           "' as a list (one per prompt) is not supported: give one value for "
                           "every prompt");
    }
  }
  SGL_RETURN_IF_ERROR(read(o, "return_logprob", r.return_logprob));
  SGL_RETURN_IF_ERROR(read(o, "top_logprobs_num", r.top_logprobs_num));
  if (r.top_logprobs_num < 0 || r.top_logprobs_num > 1024) {
    return field_error("top_logprobs_num", "must be in [0, 1024]");
  }
  SGL_RETURN_IF_ERROR(read(o, "logprob_start_len", r.logprob_start_len));
  if (r.logprob_start_len < -1) return field_error("logprob_start_len", "must be >= -1");
  SGL_RETURN_IF_ERROR(read(o, "return_text_in_logprobs", r.return_text_in_logprobs));
  SGL_RETURN_IF_ERROR(routing_json::read_routing(o, r.batch ? r.prompts.size() : 0, r.routing));
  SGL_RETURN_IF_ERROR(read(o, "no_logs", r.no_logs));
  SGL_RETURN_IF_ERROR(read_session_params(o, r));
  SGL_RETURN_IF_ERROR(read(o, "require_reasoning", r.require_reasoning));
  SGL_RETURN_IF_ERROR(read_hidden_states_mode(o, r.return_hidden_states));
  SGL_RETURN_IF_ERROR(read(o, "return_prompt_token_ids", r.return_prompt_token_ids));
  SGL_RETURN_IF_ERROR(read_routed_experts(o, r.routed_experts));
  SGL_RETURN_IF_ERROR(read(o, "max_thinking_tokens", r.max_thinking_tokens));
  if (r.max_thinking_tokens && *r.max_thinking_tokens < 0) {
    return field_error("max_thinking_tokens", "must be >= 0");
  }
  SGL_RETURN_IF_ERROR(check_modalities(o));
  if (const json* v = find(o, "background"); v && !asks_nothing(*v)) {
    return unimplemented("'background' is not supported: background requests are not implemented");
  }
  if (static_cast<int64_t>(r.prompts.size()) * r.sampling.n > kMaxBatchPrompts) {
    return field_error("n",
                       "times the number of prompts exceeds " + std::to_string(kMaxBatchPrompts));
  }
  return r;
}

Result<SamplingInput> apply_preferred_sampling_params(std::string_view json_text,
                                                      SamplingInput defaults) {
  SGL_ASSIGN_OR_RETURN(json o, parse_object(json_text));
  // Values a request's own field replaces whole. (Lists, grammars, n and seeds would be added
  // to or clash with a request's own, so they stay per request.)
  static constexpr std::array<std::string_view, 8> kDefaultable = {"temperature",
                                                                   "top_p",
                                                                   "top_k",
                                                                   "min_p",
                                                                   "frequency_penalty",
                                                                   "presence_penalty",
                                                                   "repetition_penalty",
                                                                   "max_new_tokens"};
  for (const auto& [key, value] : o.items()) {
    if (std::find(kDefaultable.begin(), kDefaultable.end(), key) == kDefaultable.end()) {
      return field_error(key,
                         "is not taken as a server-wide default (temperature, top_p, top_k, "
                         "min_p, frequency_penalty, presence_penalty, repetition_penalty and "
                         "max_new_tokens are)");
    }
  }
  SGL_RETURN_IF_ERROR(sampling_json::read_sampling_params(o, defaults));
  defaults.default_max_tokens = std::exchange(defaults.max_tokens, std::nullopt);
  return defaults;
}

Result<TokenizeInput> parse_tokenize_request(std::string_view body) {
  SGL_ASSIGN_OR_RETURN(json o, parse_object(body));
  TokenizeInput r;
  // SGLang's chat form of /tokenize (messages rendered by the chat template) is not implemented:
  // refused by name, never a prompt tokenized beside ignored messages.
  static constexpr request_json::RefusedField kChatForm[] = {
      {"messages", "the chat form of /tokenize is not implemented (give 'prompt')"},
      {"tools", "the chat form of /tokenize is not implemented"},
      {"chat_template_kwargs", "the chat form of /tokenize is not implemented"},
      {"add_generation_prompt", "the chat form of /tokenize is not implemented"},
  };
  SGL_RETURN_IF_ERROR(request_json::refuse_fields(o, kChatForm));
  // NOTE: the prompts are moved out of the parsed body, not copied: they may be megabytes.
  json* prompt = find_mutable(o, "prompt");
  if (!prompt) prompt = find_mutable(o, "text");
  if (!prompt) return field_error("prompt", "is required");
  if (prompt->is_string()) {
    r.prompts.push_back(std::move(prompt->get_ref<std::string&>()));
  } else if (prompt->is_array() && !prompt->empty() &&
             static_cast<int64_t>(prompt->size()) <= kMaxBatchPrompts) {
    r.batch = true;
    for (json& p : *prompt) {
      if (!p.is_string()) return field_error("prompt", "must be a string or a list of strings");
      r.prompts.push_back(std::move(p.get_ref<std::string&>()));
    }
  } else {
    return field_error("prompt", "must be a string or a non-empty list of strings");
  }
  SGL_RETURN_IF_ERROR(read(o, "add_special_tokens", r.add_special_tokens));
  return r;
}

Result<DetokenizeInput> parse_detokenize_request(std::string_view body) {
  SGL_ASSIGN_OR_RETURN(json o, parse_object(body));
  DetokenizeInput r;
  const json* tokens = find(o, "tokens");
  if (!tokens) return field_error("tokens", "is required");
  SGL_RETURN_IF_ERROR(to_ids(*tokens, "tokens", r.tokens));
  SGL_RETURN_IF_ERROR(read(o, "skip_special_tokens", r.skip_special_tokens));
  return r;
}

Result<AbortInput> parse_abort_request(std::string_view body) {
  SGL_ASSIGN_OR_RETURN(json o, parse_object(body));
  AbortInput r;
  SGL_RETURN_IF_ERROR(read(o, "rid", r.rid));
  SGL_RETURN_IF_ERROR(read(o, "abort_all", r.abort_all));
  if (r.rid.empty() && !r.abort_all) return field_error("rid", "is required (or abort_all)");
  return r;
}

Status check_optional_object(std::string_view body) {
  return request_json::parse_optional_object(body).status();
}

}  // namespace sgl::server
