// The request parsers' shared JSON helpers (request_json.h).
#include "server/request_json.h"

#include <algorithm>

#include "server/openai_json.h"

namespace sgl::server::request_json {
namespace {

using json = nlohmann::json;

// Rejects nesting deeper than kMaxJsonDepth before parsing (strings are skipped).
Status check_depth(std::string_view body) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return invalid_argument("the JSON nests deeper than " + std::to_string(kMaxJsonDepth));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return Status::ok_status();
}

nlohmann::ordered_json utf8_bytes(const std::string& s) {
  nlohmann::ordered_json bytes = nlohmann::ordered_json::array();
  for (unsigned char c : s) bytes.push_back(static_cast<int>(c));
  return bytes;
}

}  // namespace

Result<json> parse_object(std::string_view body) {
  SGL_RETURN_IF_ERROR(check_depth(body));
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {
    return invalid_argument(std::string("invalid JSON body: ") + e.what());
  }
  if (!j.is_object()) return invalid_argument("the JSON body must be an object");
  return j;
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

Result<std::string> joined_text(const json& content, const std::string& where,
                                std::initializer_list<std::string_view> text_types) {
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
    if (!text.empty()) text += "\n";
    text += value->get<std::string>();
  }
  return text;
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

const json* find(const json& o, const char* key) {
  const auto it = o.find(key);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}

bool asks_nothing(const json& v) {
  return (v.is_boolean() && !v.get<bool>()) ||
         (v.is_string() && v.get_ref<const std::string&>().empty()) ||
         (v.is_structured() && v.empty());
}

HttpResponse json_response(const nlohmann::ordered_json& body, int status) {
  HttpResponse r;
  r.status = status;
  r.body = dump(body);
  return r;
}

}  // namespace sgl::server::request_json
