// The request parsers' shared JSON helpers (request_json.h).
#include "server/request_json.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/json_nesting.h"
#include "core/ordered_json.h"
#include "server/openai_json.h"

namespace sgl::server::request_json {
namespace {

using json = nlohmann::ordered_json;

nlohmann::ordered_json utf8_bytes(const std::string& s) {
  nlohmann::ordered_json bytes = nlohmann::ordered_json::array();
  for (unsigned char c : s) bytes.push_back(static_cast<int>(c));
  return bytes;
}

}  // namespace

Result<json> parse_object(std::string_view body) {
  SGL_RETURN_IF_ERROR(check_json_nesting(body, kMaxJsonDepth));
  auto j = parse_ordered_json(body);
  if (!j.ok()) return invalid_argument("invalid JSON body: " + j.status().message());
  if (!j->is_object()) return invalid_argument("the JSON body must be an object");
  return j;
}

Result<json> parse_optional_object(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return json::object();
  return parse_object(body);
}

Status field_error(std::string_view field, std::string_view problem) {
  std::string message;
  message.reserve(field.size() + problem.size() + 3);
  message.append(1, '\'').append(field).append("' ").append(problem);
  return invalid_argument(std::move(message));
}

Status refuse_fields(const json& o, std::span<const RefusedField> fields) {
  for (const RefusedField& f : fields) {
    const json* v = find(o, f.name);
    if (!v || asks_nothing(*v)) continue;
    return unimplemented("'" + std::string(f.name) + "' is not supported: " + f.reason);
  }
  return Status::ok_status();
}

Status refuse_held_reasoning(const json& o, std::string_view route) {
  const json* v = find(o, "stream_reasoning");
  if (!v || *v != false) return Status::ok_status();
  return unimplemented("'stream_reasoning' = false is not supported on " + std::string(route) +
                       " (its reasoning streams as it is made)");
}

json template_arguments(const json& arguments) {
  if (!arguments.is_string()) return arguments;
  auto parsed = parse_ordered_json(arguments.get_ref<const std::string&>());
  return parsed.ok() && parsed->is_object() ? *std::move(parsed) : arguments;
}

Status set_template_kwarg(json& chat, const char* key, const json& value, std::string_view field) {
  json& kwargs = chat["chat_template_kwargs"];
  if (kwargs.is_null()) kwargs = json::object();
  if (!kwargs.is_object()) return field_error("chat_template_kwargs", "must be an object");
  if (kwargs.contains(key) && kwargs[key] != value) {
    return invalid_argument("'" + std::string(field) + "' and chat_template_kwargs." + key +
                            " disagree");
  }
  kwargs[key] = value;
  return Status::ok_status();
}

Result<bool> apply_reasoning_effort(const json& effort, std::string_view field, json& chat) {
  static constexpr std::string_view kEfforts[] = {"none", "minimal", "low", "medium",
                                                  "high", "xhigh",   "max"};
  if (!effort.is_string() || std::find(std::begin(kEfforts), std::end(kEfforts),
                                       effort.get<std::string>()) == std::end(kEfforts)) {
    return field_error(field, "must be one of none, minimal, low, medium, high, xhigh, max");
  }
  const bool on = effort != "none";
  SGL_RETURN_IF_ERROR(set_template_kwarg(chat, "enable_thinking", on, field));
  if (on) SGL_RETURN_IF_ERROR(set_template_kwarg(chat, "reasoning_effort", effort, field));
  return on;
}

Status check_fields(const json& o, std::initializer_list<std::string_view> known,
                    std::string_view prefix) {
  for (const auto& [key, value] : o.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string names;
    for (std::string_view k : known) names += (names.empty() ? "" : ", ") + std::string(k);
    return field_error(std::string(prefix) + key, "is not taken here (" + names + ")");
  }
  return Status::ok_status();
}

json arguments_object(const std::string& arguments) {
  json object = json::parse(arguments, nullptr, /*allow_exceptions=*/false);
  return object.is_object() ? object : json::object();
}

Result<std::string> joined_text(const json& content, const std::string& where,
                                std::initializer_list<std::string_view> text_types,
                                std::string_view separator) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return field_error(where, "must be a string or a list of parts");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    const json* type = part.is_object() ? find(part, "type") : nullptr;
    if (!type || !type->is_string()) return field_error(at, "must be an object with a 'type'");
    const std::string& t = type->get_ref<const std::string&>();
    if (std::find(text_types.begin(), text_types.end(), t) == text_types.end()) {
      return unimplemented("parts of type '" + t + "' (" + at +
                           ") are not supported yet (text only)");
    }
    const json* value = find(part, "text");
    if (!value || !value->is_string()) return field_error(at + ".text", "must be a string");
    if (i > 0) text += separator;
    text += value->get<std::string>();
  }
  return text;
}

// An integer (integral floats such as 3.0 included).
Status to_int(const json& v, std::string_view key, int64_t& out) {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return field_error(key, "is out of range");
    }
    out = static_cast<int64_t>(v.get<uint64_t>());
  } else if (v.is_number_integer()) {
    out = v.get<int64_t>();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e15) {
      return field_error(key, "must be an integer");
    }
    out = static_cast<int64_t>(d);
  } else {
    return field_error(key, "must be an integer");
  }
  return Status::ok_status();
}

// A token id list: integers in [0, 2^31).
Status to_ids(const json& v, std::string_view key, std::vector<int32_t>& out) {
  if (!v.is_array()) return field_error(key, "must be a list of token ids");
  out.clear();
  out.reserve(v.size());
  for (const json& e : v) {
    int64_t id = 0;
    if (!e.is_number_integer() && !e.is_number_unsigned()) {
      return field_error(key, "must hold integer token ids");
    }
    SGL_RETURN_IF_ERROR(to_int(e, key, id));
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      return field_error(key, "holds an invalid token id " + std::to_string(id));
    }
    out.push_back(static_cast<int32_t>(id));
  }
  return Status::ok_status();
}

// A prompt in any of the API's forms: "text", ["a", "b"], [1, 2], [[1, 2], [3]].
Status read_prompts(const json& v, std::string_view key, std::vector<PromptInput>& out,
                    bool& batch) {
  out.clear();
  batch = false;
  if (v.is_string()) {
    out.push_back({true, v.get<std::string>(), {}});
    return Status::ok_status();
  }
  if (!v.is_array() || v.empty()) {
    return field_error(key,
                       "must be a string, a list of strings, a list of token ids or a "
                       "list of token id lists (non-empty)");
  }
  if (static_cast<int64_t>(v.size()) > kMaxBatchPrompts && !v[0].is_number()) {
    return field_error(key, "may hold at most " + std::to_string(kMaxBatchPrompts) + " prompts");
  }
  if (v[0].is_number()) {
    PromptInput p;
    SGL_RETURN_IF_ERROR(to_ids(v, key, p.ids));
    out.push_back(std::move(p));
    return Status::ok_status();
  }
  batch = true;
  for (const json& e : v) {
    PromptInput p;
    if (e.is_string() && v[0].is_string()) {
      p.is_text = true;
      p.text = e.get<std::string>();
    } else if (e.is_array() && v[0].is_array()) {
      SGL_RETURN_IF_ERROR(to_ids(e, key, p.ids));
    } else {
      return field_error(key, "mixes prompt forms or holds a value that is not a prompt");
    }
    out.push_back(std::move(p));
  }
  return Status::ok_status();
}

nlohmann::ordered_json token_logprobs(const ChoiceDelta& d) {
  using ordered = nlohmann::ordered_json;
  ordered entries = ordered::array();
  for (size_t i = 0; i < d.token_ids.size(); ++i) {
    const std::string& text = i < d.token_texts.size() ? d.token_texts[i] : std::string();
    ordered top = ordered::array();
    if (i < d.top_logprobs.size()) {
      for (size_t k = 0; k < d.top_logprobs[i].size(); ++k) {
        const std::string& alt = d.top_token_texts[i][k];
        top.push_back({{"token", alt},
                       {"logprob", d.top_logprobs[i][k].logprob},
                       {"bytes", utf8_bytes(alt)}});
      }
    }
    entries.push_back({{"token", text},
                       {"logprob", i < d.logprobs.size() ? ordered(d.logprobs[i]) : ordered()},
                       {"bytes", utf8_bytes(text)},
                       {"top_logprobs", std::move(top)}});
  }
  return entries;
}

Result<std::string_view> read_text_or_input_ids(const json& o, std::vector<PromptInput>& out,
                                                bool& batch) {
  const json* text = find(o, "text");
  const json* ids = find(o, "input_ids");
  if ((text == nullptr) == (ids == nullptr)) {
    return invalid_argument("give exactly one of 'text' and 'input_ids'");
  }
  if (text) {
    if (!text->is_string() && !(text->is_array() && !text->empty() && (*text)[0].is_string())) {
      return field_error("text", "must be a string or a non-empty list of strings");
    }
    SGL_RETURN_IF_ERROR(read_prompts(*text, "text", out, batch));
    return std::string_view("text");
  }
  if (!ids->is_array() || ids->empty() || (*ids)[0].is_string()) {
    return field_error("input_ids", "must be a non-empty list of token ids or of id lists");
  }
  SGL_RETURN_IF_ERROR(read_prompts(*ids, "input_ids", out, batch));
  return std::string_view("input_ids");
}

const json* find(const json& o, const char* key) {
  const auto it = o.find(key);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}

bool asks_nothing(const json& v) {
  return (v.is_boolean() && !v.get<bool>()) ||
         (v.is_string() && v.get_ref<const std::string&>().empty()) ||
         (v.is_structured() && v.empty());
}

void add_cache_report(json& usage, int64_t cached_tokens) {
  usage["prompt_tokens_details"] = {{"cached_tokens", cached_tokens}};
}

HttpResponse json_response(const nlohmann::ordered_json& body, int status) {
  HttpResponse r;
  r.status = status;
  r.body = dump(body);
  return r;
}

json* find_mutable(json& o, const char* key) {
  const auto it = o.find(key);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}

Status read(const json& o, const char* key, bool& out) {
  const json* v = find(o, key);
  if (!v) return Status::ok_status();
  if (!v->is_boolean()) return field_error(key, "must be a boolean");
  out = v->get<bool>();
  return Status::ok_status();
}

Status read(const json& o, const char* key, double& out) {
  const json* v = find(o, key);
  if (!v) return Status::ok_status();
  if (!v->is_number()) return field_error(key, "must be a number");
  out = v->get<double>();
  if (!std::isfinite(out)) return field_error(key, "must be finite");
  return Status::ok_status();
}

Status read(const json& o, const char* key, int64_t& out) {
  const json* v = find(o, key);
  return v ? to_int(*v, key, out) : Status::ok_status();
}

Status read(const json& o, const char* key, std::optional<int64_t>& out) {
  const json* v = find(o, key);
  if (!v) return Status::ok_status();
  int64_t x = 0;
  SGL_RETURN_IF_ERROR(to_int(*v, key, x));
  out = x;
  return Status::ok_status();
}

Status read(const json& o, const char* key, std::string& out) {
  const json* v = find(o, key);
  if (!v) return Status::ok_status();
  if (!v->is_string()) return field_error(key, "must be a string");
  out = v->get<std::string>();
  return Status::ok_status();
}

Status read(const json& o, const char* key, std::optional<std::string>& out) {
  std::string s;
  if (!find(o, key)) return Status::ok_status();
  SGL_RETURN_IF_ERROR(read(o, key, s));
  out = std::move(s);
  return Status::ok_status();
}

Status check_range(std::string_view key, double v, double lo, double hi) {
  if (v < lo || v > hi) {
    return field_error(key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                "], got " + std::to_string(v));
  }
  return Status::ok_status();
}

Status reject_limited(const json& o, std::span<const LimitedField> fields) {
  for (const LimitedField& f : fields) {
    const json* v = find(o, f.name);
    if (!v || asks_nothing(*v)) continue;
    const std::string value = v->is_string() ? v->get<std::string>() : v->dump();
    if (std::any_of(f.allowed.begin(), f.allowed.end(),
                    [&](const char* a) { return a != nullptr && value == a; })) {
      continue;
    }
    return unimplemented("'" + std::string(f.name) + "' = " + value +
                         " is not supported: " + f.feature);
  }
  return Status::ok_status();
}

}  // namespace sgl::server::request_json
