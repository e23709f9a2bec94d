// Ollama's /api/chat and /api/generate bodies translated into OpenAI chat / completions bodies and
// read by those routes' parsers (ollama_json.h).
#include "server/ollama_json.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "server/request_json.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;
using request_json::asks_nothing;
using request_json::field_error;
using request_json::find;

// SGLang's default reply length for Ollama requests without num_predict.
constexpr int64_t kDefaultNumPredict = 2048;

// options.num_predict: a limit (max_tokens), a negative one none but the context (Ollama's -1
// and -2), and absent SGLang's default for these routes, cut to the room the prompt leaves.
struct NumPredict {
  bool given = false;
  bool unbounded = false;
};

void apply(const NumPredict& n, SamplingInput& s) {
  if (n.given && !n.unbounded) return;  // max_tokens, read by the route's parser
  s.max_tokens.reset();                 // (the completions parser's default of 16)
  if (n.unbounded) {
    s.max_tokens_unbounded = true;
  } else {
    s.default_max_tokens = kDefaultNumPredict;
  }
}

// options -> the OpenAI body's sampling fields.
Status read_options(const json& o, json& body, NumPredict& num_predict) {
  const json* options = find(o, "options");
  if (!options) return Status::ok_status();
  if (!options->is_object()) return field_error("options", "must be an object");
  struct Mapped {
    const char* option;
    const char* field;
  };
  static constexpr Mapped kMapped[] = {{"temperature", "temperature"},
                                       {"top_p", "top_p"},
                                       {"top_k", "top_k"},
                                       {"min_p", "min_p"},
                                       {"stop", "stop"},
                                       {"presence_penalty", "presence_penalty"},
                                       {"frequency_penalty", "frequency_penalty"},
                                       {"repeat_penalty", "repetition_penalty"},
                                       {"seed", "seed"}};
  for (const auto& [key, value] : options->items()) {
    if (value.is_null()) continue;
    if (key == "num_predict") {
      if (!value.is_number_integer())
        return field_error("options.num_predict", "must be an integer");
      num_predict.given = true;
      num_predict.unbounded = value.get<int64_t>() < 0;
      if (!num_predict.unbounded) body["max_tokens"] = value;
      continue;
    }
    const std::string& option = key;  // (clang before 16 cannot capture a structured binding)
    const auto m = std::find_if(std::begin(kMapped), std::end(kMapped),
                                [&](const Mapped& x) { return option == x.option; });
    if (m == std::end(kMapped)) {
      return unimplemented("'options." + key +
                           "' is not supported (temperature, top_p, top_k, min_p, num_predict, "
                           "stop, presence_penalty, frequency_penalty, repeat_penalty, seed; the "
                           "context length and the runtime are the server's)");
    }
    body[m->field] = value;
  }
  return Status::ok_status();
}

// format: "json" (any JSON object) or a JSON Schema -> response_format.
Status read_format(const json& o, json& body) {
  const json* format = find(o, "format");
  if (!format || asks_nothing(*format)) return Status::ok_status();
  if (*format == "json") {
    body["response_format"] = {{"type", "json_object"}};
  } else if (format->is_object()) {
    body["response_format"] = {
        {"type", "json_schema"},
        {"json_schema", {{"name", "response"}, {"schema", *format}, {"strict", true}}}};
  } else {
    return field_error("format", "must be \"json\" or a JSON Schema object");
  }
  return Status::ok_status();
}

// An Ollama message as the chat route's: thinking as reasoning_content, tool_calls' arguments
// (objects) as they are, a tool result's tool_name as its name.
Result<json> chat_message(const json& m, size_t index) {
  const std::string where = "messages[" + std::to_string(index) + "]";
  if (!m.is_object()) return field_error(where, "must be an object");
  SGL_RETURN_IF_ERROR(request_json::check_fields(
      m, {"role", "content", "images", "thinking", "tool_calls", "tool_name"}, where + "."));
  if (const json* images = find(m, "images"); images && !asks_nothing(*images)) {
    return unimplemented("'" + where + ".images' is not supported (text models only)");
  }
  json out = {{"role", m.value("role", json())}, {"content", m.value("content", json(""))}};
  if (const json* thinking = find(m, "thinking")) {
    if (!thinking->is_string()) return field_error(where + ".thinking", "must be a string");
    if (!thinking->get_ref<const std::string&>().empty()) out["reasoning_content"] = *thinking;
  }
  if (const json* name = find(m, "tool_name")) out["name"] = *name;
  if (const json* calls = find(m, "tool_calls"); calls && !asks_nothing(*calls)) {
    if (!calls->is_array()) return field_error(where + ".tool_calls", "must be a list");
    json converted = json::array();
    for (size_t i = 0; i < calls->size(); ++i) {
      const std::string at = where + ".tool_calls[" + std::to_string(i) + "]";
      const json& call = (*calls)[i];
      const json* function = call.is_object() ? find(call, "function") : nullptr;
      const json* name = function && function->is_object() ? find(*function, "name") : nullptr;
      if (!name || !name->is_string())
        return field_error(at + ".function.name", "must be a string");
      converted.push_back(
          {{"type", "function"},
           {"function",
            {{"name", *name}, {"arguments", function->value("arguments", json::object())}}}});
    }
    out["tool_calls"] = std::move(converted);
  }
  return out;
}

// think: true / false switch thinking (the template's enable_thinking), a level ("low",
// "medium", "high") turns it on at that reasoning effort. Returns the switch.
Result<std::optional<bool>> read_think(const json& o, json& body) {
  const json* think = find(o, "think");
  if (!think || think->is_null()) return std::optional<bool>();
  if (think->is_boolean()) {
    SGL_RETURN_IF_ERROR(
        request_json::set_template_kwarg(body, "enable_thinking", think->get<bool>(), "think"));
    return std::optional<bool>(think->get<bool>());
  }
  if (*think != "low" && *think != "medium" && *think != "high") {
    return field_error("think", "must be a boolean or 'low', 'medium' or 'high'");
  }
  SGL_ASSIGN_OR_RETURN(const bool on, request_json::apply_reasoning_effort(*think, "think", body));
  return std::optional<bool>(on);
}

// stream: true unless false (Ollama's default); keep_alive: any (the model stays loaded).
Status read_common(const json& o, json& body, NumPredict& num_predict) {
  const json* stream = find(o, "stream");  // (null: absent)
  if (stream && !stream->is_boolean()) return field_error("stream", "must be a boolean");
  body["stream"] = stream == nullptr || stream->get<bool>();
  if (const json* model = find(o, "model")) body["model"] = *model;
  SGL_RETURN_IF_ERROR(read_options(o, body, num_predict));
  return read_format(o, body);
}

// Model options change no embedding here: refused unless empty.
Status refuse_embedding_options(const json& o, std::string_view route) {
  if (const json* options = find(o, "options"); options && !asks_nothing(*options)) {
    return unimplemented("'options' is not supported on " + std::string(route) +
                         ": model options change no embedding here");
  }
  return Status::ok_status();
}

}  // namespace

Result<ChatRequest> parse_ollama_chat(std::string_view text, const SamplingInput& defaults) {
  SGL_ASSIGN_OR_RETURN(json o, request_json::parse_object(text));
  SGL_RETURN_IF_ERROR(request_json::check_fields(
      o, {"model", "messages", "stream", "format", "options", "keep_alive", "think", "tools"}));
  json body = json::object();
  NumPredict num_predict;
  SGL_RETURN_IF_ERROR(read_common(o, body, num_predict));
  const json* messages = find(o, "messages");
  if (!messages || !messages->is_array() || messages->empty()) {
    return field_error("messages", "must be a non-empty list of messages");
  }
  body["messages"] = json::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    SGL_ASSIGN_OR_RETURN(json m, chat_message((*messages)[i], i));
    body["messages"].push_back(std::move(m));
  }
  if (const json* tools = find(o, "tools")) body["tools"] = *tools;
  SGL_ASSIGN_OR_RETURN(const std::optional<bool> thinking, read_think(o, body));
  SGL_ASSIGN_OR_RETURN(ChatRequest req, request_json::parse_chat_object(body, defaults));
  if (thinking) req.thinking = thinking;
  apply(num_predict, req.sampling);
  return req;
}

Result<OllamaEmbedRequest> parse_ollama_embed(std::string_view text) {
  SGL_ASSIGN_OR_RETURN(json o, request_json::parse_object(text));
  SGL_RETURN_IF_ERROR(request_json::check_fields(
      o, {"model", "input", "truncate", "dimensions", "options", "keep_alive"}));
  OllamaEmbedRequest r;
  SGL_RETURN_IF_ERROR(request_json::read(o, "model", r.embedding.model));
  const json* input = find(o, "input");
  if (!input) return field_error("input", "is required");
  const bool list = input->is_array();
  if (list && input->empty()) return field_error("input", "must not be an empty list");
  for (size_t i = 0; i < (list ? input->size() : 1); ++i) {
    const json& item = list ? (*input)[i] : *input;
    const std::string where = list ? "input[" + std::to_string(i) + "]" : "input";
    if (!item.is_string()) return field_error(where, "must be a string");
    if (item.get_ref<const std::string&>().empty()) return field_error(where, "must not be empty");
    PromptInput prompt;
    prompt.is_text = true;
    prompt.text = item.get<std::string>();
    r.embedding.inputs.push_back(std::move(prompt));
  }
  if (const json* truncate = find(o, "truncate"); truncate && !truncate->is_null()) {
    if (!truncate->is_boolean()) return field_error("truncate", "must be a boolean");
    r.truncate = truncate->get<bool>();
  }
  if (const json* dimensions = find(o, "dimensions"); dimensions && !dimensions->is_null()) {
    int64_t d = 0;
    SGL_RETURN_IF_ERROR(request_json::to_int(*dimensions, "dimensions", d));
    if (d < 1) return field_error("dimensions", "must be at least 1");
    r.embedding.dimensions = d;
  }
  SGL_RETURN_IF_ERROR(refuse_embedding_options(o, "/api/embed"));
  return r;
}

Result<OllamaEmbedRequest> parse_ollama_embeddings(std::string_view text) {
  SGL_ASSIGN_OR_RETURN(json o, request_json::parse_object(text));
  SGL_RETURN_IF_ERROR(request_json::check_fields(o, {"model", "prompt", "options", "keep_alive"}));
  OllamaEmbedRequest r;
  r.legacy = true;
  SGL_RETURN_IF_ERROR(request_json::read(o, "model", r.embedding.model));
  std::string prompt;
  SGL_RETURN_IF_ERROR(request_json::read(o, "prompt", prompt));
  if (!prompt.empty()) {
    PromptInput input;
    input.is_text = true;
    input.text = std::move(prompt);
    r.embedding.inputs.push_back(std::move(input));
  }
  SGL_RETURN_IF_ERROR(refuse_embedding_options(o, "/api/embeddings"));
  return r;
}

Result<CompletionRequest> parse_ollama_generate(std::string_view text,
                                                const SamplingInput& defaults) {
  SGL_ASSIGN_OR_RETURN(json o, request_json::parse_object(text));
  SGL_RETURN_IF_ERROR(request_json::check_fields(
      o, {"model", "prompt", "suffix", "system", "template", "context", "stream", "raw", "format",
          "options", "keep_alive", "images", "think"}));
  for (const char* key : {"suffix", "template", "context", "images"}) {
    if (const json* v = find(o, key); v && !v->is_null() && !asks_nothing(*v)) {
      return unimplemented("'" + std::string(key) +
                           "' is not supported on /api/generate (the prompt is generated from as "
                           "it is, as SGLang serves it)");
    }
  }
  if (const json* raw = find(o, "raw"); raw && !raw->is_boolean()) {
    return field_error("raw", "must be a boolean");
  }
  if (const json* think = find(o, "think"); think && !think->is_null() && *think != false) {
    return unimplemented(
        "'think' is not supported on /api/generate (no chat template renders "
        "the prompt); use /api/chat");
  }
  json body = json::object();
  NumPredict num_predict;
  SGL_RETURN_IF_ERROR(read_common(o, body, num_predict));
  std::string prompt;
  SGL_RETURN_IF_ERROR(request_json::read(o, "prompt", prompt));
  std::string system;
  SGL_RETURN_IF_ERROR(request_json::read(o, "system", system));
  if (!system.empty()) prompt = system + "\n\n" + prompt;
  const bool blank = prompt.find_first_not_of(" \t\r\n") == std::string::npos;
  body["prompt"] = blank ? "x" : prompt;  // a blank prompt generates nothing (below)
  SGL_ASSIGN_OR_RETURN(CompletionRequest req,
                       request_json::parse_completion_object(body, defaults));
  if (blank) req.prompts.clear();
  apply(num_predict, req.sampling);
  return req;
}

}  // namespace sgl::server
