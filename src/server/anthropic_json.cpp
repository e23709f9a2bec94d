// The Anthropic Messages request, translated into an OpenAI chat request body and read by the
// chat route's parser, so both routes share one meaning for every sampling field.
#include "server/anthropic_json.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/anthropic_content.h"
#include "server/request_json.h"
#include "server/sampling_json.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;
using request_json::asks_nothing;
using request_json::field_error;
using request_json::find;

// Messages fields for features sgl.cpp does not have, refused unless they ask for nothing.
constexpr request_json::RefusedField kRefusedFeatures[] = {
    {"mcp_servers", "MCP connectors are not implemented"},
    {"container", "code-execution containers are not implemented"},
    {"context_management", "context management is not implemented"},
    {"diagnostics", "prompt-cache diagnostics are not implemented"},
    {"inference_geo", "a self-hosted server runs where it runs"},
};

// Fields of the OpenAI chat request that a Messages reply cannot carry.
constexpr const char* kChatOnlyFields[] = {"n",
                                           "logprobs",
                                           "top_logprobs",
                                           "stream_options",
                                           "max_completion_tokens",
                                           "response_format",
                                           "functions",
                                           "function_call"};

// thinking: "disabled" turns thinking off, "enabled" and "adaptive" turn it on (the template's
// enable_thinking); enabled's budget_tokens caps the reasoning's tokens. Sets the chat body's
// template kwargs; returns the switch and the budget.
Status read_thinking(const json& o, json& chat, std::optional<bool>& on,
                     std::optional<int64_t>& budget) {
  const json* thinking = find(o, "thinking");
  if (!thinking) return Status::ok_status();
  const json* type = thinking->is_object() ? find(*thinking, "type") : nullptr;
  if (!type || !type->is_string()) {
    return field_error("thinking", "must be an object with a 'type'");
  }
  const std::string t = type->get<std::string>();
  if (t != "enabled" && t != "disabled" && t != "adaptive") {
    return unimplemented("'thinking.type' '" + t +
                         "' is not supported (enabled, adaptive or disabled)");
  }
  for (const auto& [key, value] : thinking->items()) {
    if (key == "type" || (key == "budget_tokens" && t == "enabled")) continue;
    if (key == "display" && t != "disabled" && (value.is_null() || value == "summarized")) {
      continue;  // the thinking is shown in full
    }
    return unimplemented("'thinking." + key + "' = " + value.dump() + " is not supported");
  }
  on = t != "disabled";
  if (t == "enabled") {
    const json* b = find(*thinking, "budget_tokens");
    if (!b || !b->is_number_integer() || b->get<int64_t>() < 1) {
      return field_error("thinking.budget_tokens", "must be an integer >= 1");
    }
    budget = b->get<int64_t>();
  }
  return request_json::set_template_kwarg(chat, "enable_thinking", *on, "thinking");
}

// output_config: format (a JSON Schema the reply follows) as the chat route's strict
// json_schema response_format, effort as its reasoning effort (thinking on at that level, or off
// for none), as SGLang maps them. Returns the thinking switch effort sets, if any.
Result<std::optional<bool>> read_output_config(const json& o, json& chat) {
  const json* config = find(o, "output_config");
  if (!config || config->is_null()) return std::optional<bool>();
  if (!config->is_object()) return field_error("output_config", "must be an object");
  std::optional<bool> thinking;
  for (const auto& [key, value] : config->items()) {
    if (value.is_null()) continue;
    if (key == "format") {
      const json* type = value.is_object() ? find(value, "type") : nullptr;
      const json* schema = value.is_object() ? find(value, "schema") : nullptr;
      if (!type || *type != "json_schema" || !schema || value.size() != 2) {
        return field_error("output_config.format",
                           "must be {\"type\": \"json_schema\", \"schema\": {...}}");
      }
      chat["response_format"] = {
          {"type", "json_schema"},
          {"json_schema", {{"name", "response"}, {"schema", *schema}, {"strict", true}}}};
    } else if (key == "effort") {
      // Anthropic's levels; thinking off is thinking.type disabled. xhigh is max, as SGLang
      // maps it (OpenAI's levels, which templates know, stop there).
      static constexpr std::string_view kLevels[] = {"low", "medium", "high", "xhigh", "max"};
      if (!value.is_string() || std::find(std::begin(kLevels), std::end(kLevels),
                                          value.get<std::string>()) == std::end(kLevels)) {
        return field_error("output_config.effort", "must be one of low, medium, high, xhigh, max");
      }
      SGL_ASSIGN_OR_RETURN(
          thinking, request_json::apply_reasoning_effort(value == "xhigh" ? json("max") : value,
                                                         "output_config.effort", chat));
    } else if (key == "task_budget") {
      return unimplemented(
          "'output_config.task_budget' is not supported: the model is not shown a budget "
          "(max_tokens caps the reply)");
    } else {
      return field_error("output_config." + key, "is not a field of output_config");
    }
  }
  return thinking;
}

}  // namespace

Result<ChatRequest> parse_messages_request(std::string_view body, const SamplingInput& defaults) {
  SGL_ASSIGN_OR_RETURN(json o, request_json::parse_object(body));

  for (const char* key : kChatOnlyFields) {
    const json* v = find(o, key);
    if (v && !asks_nothing(*v) && !(std::string_view(key) == "n" && *v == 1)) {
      return invalid_argument(
          "'" + std::string(key) +
          "' is a field of /v1/chat/completions; /v1/messages does not take it");
    }
  }
  const json* max_tokens = find(o, "max_tokens");
  if (!max_tokens) return field_error("max_tokens", "is required");
  if (!max_tokens->is_number_integer() || max_tokens->get<int64_t>() < 1) {
    return field_error("max_tokens", "must be an integer >= 1");
  }
  SGL_RETURN_IF_ERROR(request_json::refuse_fields(o, kRefusedFeatures));
  if (const json* speed = find(o, "speed"); speed && *speed != "standard") {
    return unimplemented("'speed' other than 'standard' is not supported (one serving mode)");
  }
  SGL_RETURN_IF_ERROR(request_json::refuse_held_reasoning(o, "/v1/messages"));
  for (const char* key : {"user_profile_id", "workspace_id"}) {
    if (const json* v = find(o, key); v && !v->is_string())
      return field_error(key, "must be a string");
  }
  if (const json* tier = find(o, "service_tier");
      tier && *tier != "auto" && *tier != "standard_only") {
    return field_error("service_tier", "must be 'auto' or 'standard_only'");
  }
  if (const json* metadata = find(o, "metadata"); metadata && !metadata->is_object()) {
    return field_error("metadata", "must be an object");
  }

  json messages = json::array();
  if (const json* system = find(o, "system")) {
    // SGLang's: the blocks' texts a line each, empty ones left out, and no system message for
    // a blank system prompt.
    json blocks = *system;
    if (blocks.is_array()) {
      blocks.erase(std::remove_if(blocks.begin(), blocks.end(),
                                  [](const json& b) {
                                    const json* text = b.is_object() ? find(b, "text") : nullptr;
                                    return text && text->is_string() &&
                                           text->get_ref<const std::string&>().empty();
                                  }),
                   blocks.end());
    }
    SGL_ASSIGN_OR_RETURN(std::string text,
                         request_json::joined_text(blocks, "system", {"text"}, "\n"));
    if (text.find_first_not_of(" \t\r\n") != std::string::npos) {
      messages.push_back({{"role", "system"}, {"content", std::move(text)}});
    }
  }
  const json* given = find(o, "messages");
  if (!given || !given->is_array() || given->empty()) {
    return field_error("messages", "must be a non-empty list of messages");
  }
  for (size_t i = 0; i < given->size(); ++i) {
    SGL_RETURN_IF_ERROR(anthropic::append_message((*given)[i], i, messages));
  }

  // A final assistant message is a prefill: the reply continues it (the chat route's
  // continue_final_message). Anthropic refuses one ending in whitespace.
  const bool prefill = (*given)[given->size() - 1]["role"] == "assistant";
  if (prefill) {
    const json* content = find(messages.back(), "content");
    const std::string text = content && content->is_string() ? content->get<std::string>() : "";
    if (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
      return field_error("messages", "final assistant content cannot end with trailing whitespace");
    }
  }

  json chat = json::object();
  for (const auto& [key, value] : o.items()) {
    // Handled above; cache_control needs nothing (the radix cache reuses prefixes by itself);
    // metadata, service_tier, user_profile_id and workspace_id describe the caller.
    static const char* kTranslated[] = {
        "messages",           "system",          "stop_sequences", "tools",         "tool_choice",
        "thinking",           "metadata",        "service_tier",   "mcp_servers",   "container",
        "context_management", "diagnostics",     "output_config",  "inference_geo", "speed",
        "cache_control",      "user_profile_id", "workspace_id"};
    if (std::find(std::begin(kTranslated), std::end(kTranslated), key) == std::end(kTranslated)) {
      chat[key] = value;
    }
  }
  chat["messages"] = std::move(messages);
  if (prefill) chat["continue_final_message"] = true;
  SGL_RETURN_IF_ERROR(anthropic::translate_tools(o, chat));
  if (const json* stops = find(o, "stop_sequences")) {
    if (!stops->is_array()) return field_error("stop_sequences", "must be a list of strings");
    std::vector<std::string> checked;  // the chat route's bounds, under this route's name
    SGL_RETURN_IF_ERROR(sampling_json::read_stop(o, "stop_sequences", checked));
    chat["stop"] = *stops;
  }
  std::optional<bool> thinking;
  std::optional<int64_t> budget;
  SGL_RETURN_IF_ERROR(read_thinking(o, chat, thinking, budget));
  SGL_ASSIGN_OR_RETURN(const std::optional<bool> effort, read_output_config(o, chat));
  SGL_ASSIGN_OR_RETURN(ChatRequest req, request_json::parse_chat_object(chat, defaults));
  // The schema's compile errors name the client's field (response_format itself is refused).
  if (req.sampling.grammar && req.sampling.grammar->field == "response_format") {
    req.sampling.grammar->field = "output_config.format";
  }
  // (A passed-through reasoning_effort set req.thinking already; the route checks either.)
  if (thinking || effort) req.thinking = thinking ? thinking : effort;
  req.max_reasoning_tokens = budget;
  return req;
}

}  // namespace sgl::server
