// The Responses request, translated into an OpenAI chat request body and read by the chat
// route's parser, so both routes share one meaning for every sampling field.
#include "server/responses_json.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "function_call/function_tools.h"
#include "server/request_json.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;
using request_json::asks_nothing;
using request_json::field_error;
using request_json::find;

// A function_call input item (an earlier reply's call) as an assistant message's tool call. With
// `may_join`, it joins the assistant message right before it (the text a reply wrote before its
// calls, or the calls before it), as a chat history holds one turn (SGLang merges them too).
Status function_call_message(const json& item, const std::string& where, bool may_join,
                             json& messages) {
  for (const char* key : {"call_id", "name", "arguments"}) {
    const json* v = find(item, key);
    if (!v || !v->is_string()) return field_error(where + "." + key, "must be a string");
  }
  json call = {{"id", item["call_id"]},
               {"type", "function"},
               {"function",
                {{"name", item["name"]},
                 {"arguments", request_json::template_arguments(item["arguments"])}}}};
  if (may_join && !messages.empty() && messages.back()["role"] == "assistant") {
    json& turn = messages.back();
    if (!turn.contains("tool_calls")) turn["tool_calls"] = json::array();
    turn["tool_calls"].push_back(std::move(call));
  } else {
    messages.push_back(
        {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({call})}});
  }
  return Status::ok_status();
}

// The Responses form of function tools ({"type": "function", "name", "parameters", ...}) in the
// chat form ({"type": "function", "function": {...}}); other entries pass as they are (the chat
// parser names what it refuses).
json chat_tools(const json& tools) {
  if (!tools.is_array()) return tools;
  json out = json::array();
  for (const json& t : tools) {
    if (!t.is_object() || !t.contains("name") || t.contains("function")) {
      out.push_back(t);
      continue;
    }
    json function = t;
    function.erase("type");
    out.push_back({{"type", t.value("type", json())}, {"function", std::move(function)}});
  }
  return out;
}

// A reasoning input item's text (an earlier reply's reasoning item, sent back): its
// reasoning_text parts, else its summary_text parts, joined by newlines.
Result<std::string> reasoning_text(const json& item, const std::string& where) {
  for (const char* key : {"content", "summary"}) {
    const json* parts = find(item, key);
    if (!parts || (parts->is_array() && parts->empty())) continue;
    return request_json::joined_text(*parts, where + "." + key, {"reasoning_text", "summary_text"},
                                     "\n");
  }
  return std::string();
}

// `input` as chat messages, appended to `messages`. A reasoning item becomes the
// reasoning_content of the assistant turn after it (templates that show earlier thinking, as
// Qwen3's, read it there).
// `stored`: how many of the items come from a previous response's stored conversation (errors
// name them so, and the client's own items from input[0]).
Status input_messages(const json& input, json& messages, size_t stored = 0) {
  if (input.is_string()) {
    messages.push_back({{"role", "user"}, {"content", input}});
    return Status::ok_status();
  }
  if (!input.is_array() || input.empty()) {
    return field_error("input", "must be a string or a non-empty list of input items");
  }
  std::string reasoning;       // of a reasoning item not yet placed
  std::string reasoning_item;  // where it was
  const auto place_reasoning = [&] {
    if (reasoning_item.empty()) return;
    json& turn = messages.back();
    turn["reasoning_content"] =
        turn.contains("reasoning_content")
            ? turn["reasoning_content"].get<std::string>() + "\n" + reasoning
            : reasoning;
    reasoning.clear();
    reasoning_item.clear();
  };
  for (size_t i = 0; i < input.size(); ++i) {
    const json& item = input[i];
    const std::string where = i < stored ? "the previous response's item " + std::to_string(i)
                                         : "input[" + std::to_string(i - stored) + "]";
    if (!item.is_object()) return field_error(where, "must be an object");
    const json* type = find(item, "type");
    if (type && *type == "reasoning") {
      SGL_ASSIGN_OR_RETURN(std::string text, reasoning_text(item, where));
      if (!reasoning.empty()) reasoning += "\n";
      reasoning += text;
      reasoning_item = where;
      continue;
    }
    if (type && *type == "function_call") {
      // A reasoning item between them opens a turn of its own.
      SGL_RETURN_IF_ERROR(function_call_message(item, where, reasoning_item.empty(), messages));
      place_reasoning();
      continue;
    }
    const json* role = find(item, "role");
    if (!reasoning_item.empty() && (!type || *type == "message") && role && *role != "assistant") {
      return field_error(reasoning_item,
                         "a reasoning item must come before the assistant message or "
                         "function_call it belongs to");
    }
    if (type && *type == "function_call_output") {
      const json* call_id = find(item, "call_id");
      const json* output = find(item, "output");
      if (!call_id || !call_id->is_string())
        return field_error(where + ".call_id", "must be a string");
      if (!output || !output->is_string())
        return field_error(where + ".output", "must be a string");
      messages.push_back({{"role", "tool"}, {"tool_call_id", *call_id}, {"content", *output}});
      continue;
    }
    if (type && *type != "message") {
      const std::string t = type->is_string() ? type->get<std::string>() : type->dump();
      return unimplemented("input items of type '" + t + "' (" + where +
                           ") are not supported yet (messages, reasoning, function_call and "
                           "function_call_output only: no item references)");
    }
    if (!role ||
        (*role != "user" && *role != "assistant" && *role != "system" && *role != "developer")) {
      return field_error(where + ".role", "must be 'user', 'assistant', 'system' or 'developer'");
    }
    const json* content = find(item, "content");
    if (!content) return field_error(where + ".content", "is required");
    // Text parts: input_text, and the output_text of earlier assistant turns.
    SGL_ASSIGN_OR_RETURN(
        std::string text,
        request_json::joined_text(*content, where + ".content", {"input_text", "output_text"}));
    // Chat templates know system, not developer (OpenAI's newer name for it).
    messages.push_back(
        {{"role", *role == "developer" ? "system" : *role}, {"content", std::move(text)}});
    if (*role == "assistant") place_reasoning();
  }
  if (!reasoning_item.empty()) {
    return field_error(reasoning_item,
                       "a reasoning item must come before the assistant message or "
                       "function_call it belongs to");
  }
  return Status::ok_status();
}

// Responses fields for features sgl.cpp does not have, refused unless they ask for nothing.
constexpr request_json::RefusedField kRefusedFeatures[] = {
    {"conversation",
     "conversation objects are not implemented; send the conversation in 'input' "
     "(or, with --enable-response-store, 'previous_response_id')"},
    {"prompt", "stored prompt templates are not implemented"},
    {"max_tool_calls", "a limit on tool calls is not implemented"},
    {"context_management", "context management is not implemented"},
};

// Fields of the chat request that a Responses reply cannot carry, with the Responses name
// where there is one.
constexpr std::pair<const char*, const char*> kChatOnlyFields[] = {
    {"messages", "use 'input' (and 'instructions')"},
    {"max_tokens", "use 'max_output_tokens'"},
    {"max_completion_tokens", "use 'max_output_tokens'"},
    {"n", "a response has one output message"},
    {"logprobs", "not on this route"},
    {"response_format", "use 'text.format'"},
    {"functions", "use 'tools'"},
    {"function_call", "use 'tool_choice'"},
};

// What the route handles itself (or needs nothing for), not passed to the chat parser.
constexpr const char* kTranslated[] = {"input",
                                       "instructions",
                                       "max_output_tokens",
                                       "metadata",
                                       "user",
                                       "safety_identifier",
                                       "prompt_cache_key",
                                       "service_tier",
                                       "tools",
                                       "tool_choice",
                                       "parallel_tool_calls",
                                       "text",
                                       "truncation",
                                       "stream_options",
                                       "previous_response_id",
                                       "conversation",
                                       "store",
                                       "background",
                                       "reasoning",
                                       "include",
                                       "top_logprobs",
                                       "prompt",
                                       "max_tool_calls",
                                       "context_management",
                                       "prompt_cache_retention",
                                       "request_id"};

// text.format as the chat route's response_format (SGLang's mapping): json_schema (name,
// schema, strict, description) as a json_schema response_format, json_object as one; text as
// nothing. Echoed in the response as given.
Status read_text_format(const json& o, json& chat, ResponsesRequest& out) {
  const json* text = find(o, "text");
  const json* format = text ? find(*text, "format") : nullptr;
  if (!format) return Status::ok_status();
  const json* type = format->is_object() ? find(*format, "type") : nullptr;
  if (!type || !type->is_string()) {
    return field_error("text.format", "must be an object with a 'type'");
  }
  if (*type == "json_schema") {
    const json* name = find(*format, "name");
    const json* given = find(*format, "schema");
    if (!name || !name->is_string()) return field_error("text.format.name", "must be a string");
    if (!given || !given->is_object()) {
      return field_error("text.format.schema", "must be a JSON Schema object");
    }
    json schema = {{"name", *name}, {"schema", *given}};
    for (const auto& [key, value] : format->items()) {
      if (key == "strict" || key == "description") {
        schema[key] = value;
      } else if (key != "type" && key != "name" && key != "schema") {
        return field_error("text.format." + key, "is not a field of a json_schema format");
      }
    }
    chat["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(schema)}};
  } else if (*type == "json_object") {
    chat["response_format"] = {{"type", "json_object"}};
  } else if (*type != "text") {
    return field_error("text.format.type", "must be 'text', 'json_object' or 'json_schema'");
  }
  out.text_json = request_json::dump(json{{"format", *format}});
  return Status::ok_status();
}

Status check_options(const json& o) {
  SGL_RETURN_IF_ERROR(request_json::refuse_fields(o, kRefusedFeatures));
  SGL_RETURN_IF_ERROR(request_json::refuse_held_reasoning(o, "/v1/responses"));
  for (const auto& [key, hint] : kChatOnlyFields) {
    const json* v = find(o, key);
    if (v && !asks_nothing(*v) && !(std::string_view(key) == "n" && *v == 1)) {
      return invalid_argument("'" + std::string(key) + "' is a field of /v1/chat/completions; " +
                              "/v1/responses does not take it (" + hint + ")");
    }
  }
  if (const json* text = find(o, "text")) {
    if (!text->is_object()) return field_error("text", "must be an object");
    for (const auto& [key, value] : text->items()) {
      if (key != "format" && key != "verbosity") {
        return field_error("text." + key, "is not a field of 'text' (format, verbosity)");
      }
    }
    if (const json* verbosity = find(*text, "verbosity"); verbosity && *verbosity != "medium") {
      return unimplemented("'text.verbosity' other than 'medium' is not supported");
    }
  }
  if (const json* truncation = find(o, "truncation"); truncation && *truncation != "disabled") {
    return unimplemented("'truncation' other than 'disabled' is not supported yet");
  }
  if (const json* options = find(o, "stream_options"); options && !asks_nothing(*options)) {
    const json* obfuscation =
        options->is_object() ? find(*options, "include_obfuscation") : nullptr;
    if (!options->is_object() || options->size() != 1 || !obfuscation || *obfuscation != false) {
      return unimplemented("'stream_options' is not supported (no obfuscation padding)");
    }
  }
  if (const json* tier = find(o, "service_tier"); tier && *tier != "auto" && *tier != "default") {
    return field_error("service_tier", "must be 'auto' or 'default' (one serving tier)");
  }
  for (const char* key : {"user", "safety_identifier", "prompt_cache_key", "instructions"}) {
    if (const json* v = find(o, key); v && !v->is_string())
      return field_error(key, "must be a string");
  }
  if (const json* parallel = find(o, "parallel_tool_calls"); parallel && !parallel->is_boolean()) {
    return field_error("parallel_tool_calls", "must be a boolean");
  }
  return Status::ok_status();
}

// reasoning: the effort switches thinking (request_json::apply_reasoning_effort). No summaries
// are made: the reasoning item carries the whole text. Sets the chat body's template kwargs;
// the effort is echoed.
Status read_reasoning(const json& o, json& chat, std::optional<std::string>& effort) {
  const json* reasoning = find(o, "reasoning");
  if (!reasoning || reasoning->is_null()) return Status::ok_status();
  if (!reasoning->is_object()) return field_error("reasoning", "must be an object");
  for (const auto& [key, value] : reasoning->items()) {
    if (key == "effort") continue;
    if (key == "summary" || key == "generate_summary") {
      if (value.is_null()) continue;
      return unimplemented("'reasoning." + key +
                           "' is not supported: no summaries are made (the reasoning item "
                           "carries the whole reasoning text)");
    }
    if ((key == "context" && (value.is_null() || value == "auto")) ||
        (key == "mode" && (value.is_null() || value == "standard"))) {
      continue;
    }
    return unimplemented("'reasoning." + key + "' = " + value.dump() + " is not supported");
  }
  const json* e = find(*reasoning, "effort");
  if (!e || e->is_null()) return Status::ok_status();
  SGL_RETURN_IF_ERROR(request_json::apply_reasoning_effort(*e, "reasoning.effort", chat).status());
  effort = e->get<std::string>();
  return Status::ok_status();
}

// include: only the output text's logprobs; top_logprobs needs them included. Sets the chat
// request's logprobs / top_logprobs.
Status read_logprobs(const json& o, json& chat) {
  constexpr std::string_view kLogprobs = "message.output_text.logprobs";
  bool logprobs = false;
  if (const json* include = find(o, "include")) {
    if (!include->is_array()) return field_error("include", "must be a list of strings");
    for (const json& item : *include) {
      if (!item.is_string()) return field_error("include", "must be a list of strings");
      if (item != kLogprobs) {
        return unimplemented("'include' value '" + item.get<std::string>() +
                             "' is not supported yet (only " + std::string(kLogprobs) + ")");
      }
      logprobs = true;
    }
  }
  chat["logprobs"] = logprobs;
  if (const json* top = find(o, "top_logprobs")) {
    if (!logprobs && *top != 0) {
      return field_error("top_logprobs", "needs 'include': [\"" + std::string(kLogprobs) + "\"]");
    }
    chat["top_logprobs"] = *top;  // the chat parser checks the range
  }
  return Status::ok_status();
}

// store and previous_response_id, which need --enable-response-store (`store` null without it):
// `store` (true unless false, as OpenAI's default) keeps the response; previous_response_id puts
// that stored response's conversation before `input`. Sets out.store, out.previous_turn and
// out.input_items_json (this request's input, as items); replaces o's input with the whole
// conversation.
Status read_stored_conversation(json& o, const ResponseStore* store, ResponsesRequest& out) {
  const json* keep = find(o, "store");
  if (keep && !keep->is_boolean()) return field_error("store", "must be a boolean");
  const json* previous = find(o, "previous_response_id");
  if (store == nullptr) {
    if (keep && *keep == true) {
      return unimplemented(
          "'store' is not supported: responses are kept only with --enable-response-store");
    }
    if (previous) {
      return unimplemented(
          "'previous_response_id' is not supported: responses are kept only with "
          "--enable-response-store; send the whole conversation in 'input'");
    }
    return Status::ok_status();
  }
  out.store = keep == nullptr || keep->get<bool>();
  json* input = request_json::find_mutable(o, "input");
  if (!input) return field_error("input", "is required");
  if (!input->is_string() && (!input->is_array() || input->empty())) {
    return field_error("input", "must be a string or a non-empty list of input items");
  }
  json items = input->is_string() ? json::array({{{"role", "user"}, {"content", *input}}}) : *input;
  out.input_items_json = request_json::dump(items);
  if (previous) {
    if (!previous->is_string()) return field_error("previous_response_id", "must be a string");
    const auto stored = store->get(previous->get<std::string>());
    if (!stored) {
      return not_found("previous response '" + previous->get<std::string>() +
                       "' is not stored (or was dropped: the store keeps the newest " +
                       std::to_string(kResponseStoreBytes >> 20) + " MiB)");
    }
    // A background response still running has no output to continue yet.
    const std::string& status = stored->status;
    if (status == "queued" || status == "in_progress") {
      return field_error("previous_response_id", "'" + previous->get<std::string>() +
                                                     "' is still " + status +
                                                     ": continue it once it has completed");
    }
    json conversation = json::array();
    for (const std::string* turn : stored->conversation->items_in_order()) {
      for (json& item : json::parse(*turn)) conversation.push_back(std::move(item));
    }
    out.stored_items = conversation.size();
    out.previous_turn = stored->conversation;
    for (json& item : items) conversation.push_back(std::move(item));
    *input = std::move(conversation);
  }
  out.previous_response_id = previous ? previous->get<std::string>() : std::string();
  return Status::ok_status();
}

// background (SGLang's): needs the response store and store, which keeps the response to be
// retrieved. With stream the events come on this connection as usual (SGLang's).
Status read_background(const json& o, const ResponseStore* store, ResponsesRequest& out) {
  const json* background = find(o, "background");
  if (!background) return Status::ok_status();
  if (!background->is_boolean()) return field_error("background", "must be a boolean");
  out.background = background->get<bool>();
  if (!out.background) return Status::ok_status();
  if (store == nullptr) {
    return unimplemented(
        "'background' is not supported: background responses are kept only with "
        "--enable-response-store");
  }
  if (!out.store) {
    return field_error("store",
                       "must be true with background: true (SGLang's: the response "
                       "is kept to be retrieved)");
  }
  return Status::ok_status();
}

}  // namespace

Result<ResponsesRequest> parse_responses_request(std::string_view body,
                                                 const SamplingInput& defaults,
                                                 const ResponseStore* store) {
  SGL_ASSIGN_OR_RETURN(json o, request_json::parse_object(body));
  return request_json::parse_responses_object(std::move(o), defaults, store);
}

Result<ResponsesRequest> request_json::parse_responses_object(json o, const SamplingInput& defaults,
                                                              const ResponseStore* store) {
  SGL_RETURN_IF_ERROR(check_options(o));
  ResponsesRequest out;
  SGL_RETURN_IF_ERROR(read_stored_conversation(o, store, out));
  SGL_RETURN_IF_ERROR(read_background(o, store, out));

  json messages = json::array();
  if (const json* instructions = find(o, "instructions")) {
    out.instructions = instructions->get<std::string>();
    messages.push_back({{"role", "system"}, {"content", *instructions}});
  }
  const json* input = find(o, "input");
  if (!input) return field_error("input", "is required");
  SGL_RETURN_IF_ERROR(input_messages(*input, messages, out.stored_items));

  json chat = json::object();
  for (const auto& [key, value] : o.items()) {
    if (std::find(std::begin(kTranslated), std::end(kTranslated), key) == std::end(kTranslated)) {
      chat[key] = value;
    }
  }
  chat["messages"] = std::move(messages);
  SGL_RETURN_IF_ERROR(read_text_format(o, chat, out));
  if (const json* tools = find(o, "tools")) {
    // Checked in their own form first, so that an error names the field the client wrote
    // (tools[0].parameters, not the chat form's tools[0].function.parameters).
    if (tools->is_array() && !tools->empty()) {
      SGL_RETURN_IF_ERROR(function_call::read_function_tools(request_json::dump(*tools)).status());
    }
    chat["tools"] = chat_tools(*tools);
    out.tools_json = request_json::dump(*tools);
  }
  if (const json* choice = find(o, "tool_choice")) {
    chat["tool_choice"] = *choice;
    out.tool_choice_json = request_json::dump(*choice);
  }
  if (const json* parallel = find(o, "parallel_tool_calls"))
    chat["parallel_tool_calls"] = *parallel;
  SGL_RETURN_IF_ERROR(read_reasoning(o, chat, out.reasoning_effort));
  SGL_RETURN_IF_ERROR(read_logprobs(o, chat));
  if (const json* max_output = find(o, "max_output_tokens")) {
    if (!max_output->is_number_integer() || max_output->get<int64_t>() < 1) {
      return field_error("max_output_tokens", "must be an integer >= 1");
    }
    out.max_output_tokens = max_output->get<int64_t>();
    chat["max_tokens"] = *max_output;
  }
  if (const json* metadata = find(o, "metadata")) {
    if (!metadata->is_object() || metadata->size() > 16) {
      return field_error("metadata", "must be an object of at most 16 strings");
    }
    for (const auto& [key, value] : metadata->items()) {
      if (!value.is_string()) return field_error("metadata." + key, "must be a string");
    }
    out.metadata_json = request_json::dump(*metadata);
  }
  if (const json* user = find(o, "user")) out.user = user->get<std::string>();
  // SGLang's request_id: the response's id, which /abort_request takes (the chat routes' rid).
  if (const json* id = find(o, "request_id")) {
    if (!id->is_string() || id->get_ref<const std::string&>().empty()) {
      return field_error("request_id", "must be a non-empty string");
    }
    if (chat.contains("rid"))
      return field_error("request_id", "and 'rid' name the same id: give one");
    chat["rid"] = *id;
  }
  SGL_ASSIGN_OR_RETURN(out.chat, request_json::parse_chat_object(chat, defaults));
  // A client's id names the response: it must not replace a stored one (a response's id is
  // never reused on OpenAI's API). Requests in flight under one id are the registry's to refuse.
  const std::string& rid = out.chat.routing.rid;
  if (store != nullptr && out.store && !rid.empty() && store->contains(rid)) {
    return field_error("request_id", "'" + rid +
                                         "' names a stored response: give another id, or delete "
                                         "that response first (DELETE /v1/responses/{id})");
  }
  if (out.max_output_tokens) out.chat.sampling.max_tokens_field = "max_output_tokens";
  // The schema's compile errors name the client's field (response_format itself is refused).
  if (out.chat.sampling.grammar && out.chat.sampling.grammar->field == "response_format") {
    out.chat.sampling.grammar->field = "text.format";
  }
  if (out.reasoning_effort) out.chat.thinking = *out.reasoning_effort != "none";
  return out;
}

}  // namespace sgl::server
