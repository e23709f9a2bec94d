// The request parsers' shared JSON helpers (request_json.h).
#include "server/request_json.h"

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
