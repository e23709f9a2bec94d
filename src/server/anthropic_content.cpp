// Messages content blocks and tools in the chat request's terms (anthropic_content.h).
#include "server/anthropic_content.h"

#include <algorithm>
#include <string_view>

#include "server/request_json.h"

namespace sgl::server::anthropic {
namespace {

using json = nlohmann::ordered_json;
using request_json::asks_nothing;
using request_json::field_error;
using request_json::find;

// The keys of a custom tool; the last three ask for features this server lacks.
constexpr std::string_view kToolKeys[] = {
    "type",           "name",           "description",           "input_schema",
    "cache_control",  "strict",         "eager_input_streaming", "defer_loading",
    "input_examples", "allowed_callers"};

// A custom tool as the chat form's function tool (whose reader checks the name and schema).
Result<json> function_tool(const json& tool, const std::string& where) {
  if (!tool.is_object()) return field_error(where, "must be an object");
  if (const json* type = find(tool, "type"); type && *type != "custom") {
    if (!type->is_string()) return field_error(where + ".type", "must be a string");
    return unimplemented("Anthropic's server tool '" + type->get<std::string>() + "' (" + where +
                         ") is not available here: only custom tools (name, input_schema)");
  }
  for (const auto& [key, value] : tool.items()) {
    if (std::find(std::begin(kToolKeys), std::end(kToolKeys), key) == std::end(kToolKeys)) {
      return field_error(where + "." + key, "is not a field of a custom tool");
    }
    const bool direct_only = key == "allowed_callers" && value == json::array({"direct"});
    if ((key == "defer_loading" || key == "input_examples" || key == "allowed_callers") &&
        !value.is_null() && !asks_nothing(value) && !direct_only) {
      return unimplemented("'" + where + "." + key +
                           "' is not supported (tools are shown to the model whole, as given, "
                           "and called by it directly)");
    }
  }
  const json* name = find(tool, "name");
  if (!name || !name->is_string()) return field_error(where + ".name", "must be a string");
  const json* schema = find(tool, "input_schema");
  if (!schema || !schema->is_object()) {
    return field_error(where + ".input_schema", "must be a JSON Schema object");
  }
  json function = {{"name", *name}};
  if (const json* description = find(tool, "description")) {
    if (!description->is_string()) return field_error(where + ".description", "must be a string");
    function["description"] = *description;
  }
  function["parameters"] = *schema;
  for (const char* flag : {"strict", "eager_input_streaming"}) {
    const json* v = find(tool, flag);
    if (v && !v->is_boolean()) return field_error(where + "." + flag, "must be a boolean");
  }
  if (const json* strict = find(tool, "strict")) function["strict"] = *strict;
  return json{{"type", "function"}, {"function", std::move(function)}};
}

// tool_choice as the chat form's tool_choice and parallel_tool_calls.
Status read_tool_choice(const json& choice, json& chat) {
  const json* type = choice.is_object() ? find(choice, "type") : nullptr;
  if (!type || !type->is_string()) {
    return field_error("tool_choice", "must be an object with a 'type'");
  }
  const std::string t = type->get<std::string>();
  if (t != "auto" && t != "any" && t != "tool" && t != "none") {
    return field_error("tool_choice.type", "must be 'auto', 'any', 'tool' or 'none'");
  }
  for (const auto& [key, value] : choice.items()) {
    if (key == "type" || (key == "name" && t == "tool")) continue;
    if (key == "disable_parallel_tool_use" && t != "none") {
      if (!value.is_boolean()) return field_error("tool_choice." + key, "must be a boolean");
      if (value == true) chat["parallel_tool_calls"] = false;
      continue;
    }
    return field_error("tool_choice." + key, "is not a field of tool_choice '" + t + "'");
  }
  if (t == "tool") {
    const json* name = find(choice, "name");
    if (!name || !name->is_string()) return field_error("tool_choice.name", "must be a string");
    chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", *name}}}};
  } else {
    chat["tool_choice"] = t == "any" ? "required" : t;
  }
  return Status::ok_status();
}

// A text block's text; any other block type here is refused by name.
Result<std::string> text_of(const json& block, const std::string& at, std::string_view type) {
  if (type != "text") {
    return unimplemented("content blocks of type '" + std::string(type) + "' (" + at +
                         ") are not supported here (text, thinking, tool_use and tool_result "
                         "only)");
  }
  const json* text = find(block, "text");
  if (!text || !text->is_string()) return field_error(at + ".text", "must be a string");
  return text->get<std::string>();
}

// A tool_use block (an earlier reply's call) as a chat tool call; its input reaches the template
// as the object it is.
Result<json> tool_call(const json& block, const std::string& at) {
  for (const char* key : {"id", "name"}) {
    const json* v = find(block, key);
    if (!v || !v->is_string()) return field_error(at + "." + key, "must be a string");
  }
  const json* input = find(block, "input");
  if (!input || !input->is_object()) return field_error(at + ".input", "must be an object");
  return json{{"id", block["id"]},
              {"type", "function"},
              {"function", {{"name", block["name"]}, {"arguments", *input}}}};
}

// A tool_result block as a `tool` message. is_error reaches no template (as in SGLang): the
// result's text says what happened.
Result<json> tool_message(const json& block, const std::string& at) {
  const json* id = find(block, "tool_use_id");
  if (!id || !id->is_string()) return field_error(at + ".tool_use_id", "must be a string");
  if (const json* is_error = find(block, "is_error"); is_error && !is_error->is_boolean()) {
    return field_error(at + ".is_error", "must be a boolean");
  }
  std::string text;
  if (const json* content = find(block, "content")) {
    SGL_ASSIGN_OR_RETURN(text, request_json::joined_text(*content, at + ".content", {"text"}));
  }
  return json{{"role", "tool"}, {"tool_call_id", *id}, {"content", std::move(text)}};
}

}  // namespace

Status translate_tools(const json& o, json& chat) {
  if (const json* tools = find(o, "tools")) {
    if (!tools->is_array()) return field_error("tools", "must be a list of tools");
    json converted = json::array();
    for (size_t i = 0; i < tools->size(); ++i) {
      SGL_ASSIGN_OR_RETURN(json tool,
                           function_tool((*tools)[i], "tools[" + std::to_string(i) + "]"));
      converted.push_back(std::move(tool));
    }
    if (!converted.empty()) chat["tools"] = std::move(converted);
  }
  if (const json* choice = find(o, "tool_choice"))
    SGL_RETURN_IF_ERROR(read_tool_choice(*choice, chat));
  return Status::ok_status();
}

Status append_message(const json& m, size_t index, json& messages) {
  const std::string where = "messages[" + std::to_string(index) + "]";
  const json* role = m.is_object() ? find(m, "role") : nullptr;
  if (!role || (*role != "user" && *role != "assistant")) {
    return field_error(where + ".role", "must be 'user' or 'assistant'");
  }
  const bool assistant = *role == "assistant";
  const json* content = find(m, "content");
  if (!content) return field_error(where + ".content", "is required");
  if (content->is_string()) {
    messages.push_back({{"role", *role}, {"content", *content}});
    return Status::ok_status();
  }
  if (!content->is_array()) {
    return field_error(where + ".content", "must be a string or a list of content blocks");
  }
  std::string text, thinking;
  bool has_text = false, had_results = false;
  json calls = json::array();
  for (size_t i = 0; i < content->size(); ++i) {
    const json& block = (*content)[i];
    const std::string at = where + ".content[" + std::to_string(i) + "]";
    const json* type = block.is_object() ? find(block, "type") : nullptr;
    if (!type || !type->is_string()) return field_error(at, "must be an object with a 'type'");
    const std::string& t = type->get_ref<const std::string&>();
    if (assistant && t == "thinking") {  // an earlier reply's thinking, sent back
      const json* v = find(block, "thinking");
      if (!v || !v->is_string()) return field_error(at + ".thinking", "must be a string");
      thinking += (thinking.empty() ? "" : "\n") + v->get<std::string>();
    } else if (assistant && t == "tool_use") {
      SGL_ASSIGN_OR_RETURN(json call, tool_call(block, at));
      calls.push_back(std::move(call));
    } else if (!assistant && t == "tool_result") {
      if (has_text) messages.push_back({{"role", "user"}, {"content", std::exchange(text, {})}});
      has_text = false;
      had_results = true;
      SGL_ASSIGN_OR_RETURN(json result, tool_message(block, at));
      messages.push_back(std::move(result));
    } else if (t == "tool_use" || t == "tool_result" || t == "thinking") {
      return field_error(at, "is a '" + t + "' block, which belongs in " +
                                 (t == "tool_result" ? "a user" : "an assistant") + " turn");
    } else {
      SGL_ASSIGN_OR_RETURN(const std::string part, text_of(block, at, t));
      if (has_text) text += request_json::kPartSeparator;
      text += part;
      has_text = true;
    }
  }
  if (!assistant) {
    // A turn of only tool results is those results.
    if (has_text || !had_results) messages.push_back({{"role", "user"}, {"content", text}});
    return Status::ok_status();
  }
  json message = {{"role", "assistant"}};
  message["content"] = has_text || calls.empty() ? json(text) : json(nullptr);
  // Templates that show earlier thinking (Qwen3's) read it as reasoning_content.
  if (!thinking.empty()) message["reasoning_content"] = std::move(thinking);
  if (!calls.empty()) message["tool_calls"] = std::move(calls);
  messages.push_back(std::move(message));
  return Status::ok_status();
}

std::string tool_use_id(const std::string& call_id) {
  constexpr std::string_view kChatPrefix = "call_";
  return "toolu_" +
         (call_id.starts_with(kChatPrefix) ? call_id.substr(kChatPrefix.size()) : call_id);
}

}  // namespace sgl::server::anthropic
