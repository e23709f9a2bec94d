// OpenAI-style error responses.
#include "server/errors.h"

#include <nlohmann/json.hpp>

#include "server/request_json.h"

namespace sgl::server {
namespace {

const char* error_type(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 404:
      return "not_found_error";
    case 500:
      return "internal_server_error";
    case 503:
      return "service_unavailable_error";
    default:
      return "invalid_request_error";
  }
}

nlohmann::ordered_json error_json(int status, std::string_view message, std::string_view param) {
  nlohmann::ordered_json error = {
      {"message", message}, {"type", error_type(status)}, {"param", nullptr}, {"code", status}};
  if (!param.empty()) error["param"] = param;
  return {{"error", std::move(error)}};
}

const char* anthropic_error_type(int status) {
  switch (status) {
    case 400:
    case 422:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
      return "overloaded_error";
    default:
      return "api_error";
  }
}

nlohmann::ordered_json anthropic_error_json(int status, std::string_view message) {
  return {{"type", "error"},
          {"error", {{"type", anthropic_error_type(status)}, {"message", message}}}};
}

}  // namespace

int http_status_for(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kUnimplemented:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kResourceExhausted:
      return 503;
    default:
      return 500;
  }
}

HttpResponse error_response(int status, std::string_view message, std::string_view param) {
  return request_json::json_response(error_json(status, message, param), status);
}

std::string error_event(int status, std::string_view message) {
  return "data: " + request_json::dump(error_json(status, message, {})) + "\n\n";
}

HttpResponse error_response(const Status& status) {
  return error_response(http_status_for(status.code()), status.message());
}

HttpResponse anthropic_error_response(int status, std::string_view message) {
  return request_json::json_response(anthropic_error_json(status, message), status);
}

bool is_anthropic_path(std::string_view path) {
  constexpr std::string_view kMessages = "/v1/messages";
  return path.substr(0, kMessages.size()) == kMessages &&
         (path.size() == kMessages.size() || path[kMessages.size()] == '/');
}

namespace {

// The message of an error_response (OpenAI's shape); nullopt for any other response.
std::optional<std::string> openai_error_message(const HttpResponse& response) {
  if (response.status < 400) return std::nullopt;
  const auto body = nlohmann::ordered_json::parse(response.body, nullptr, false);
  if (body.is_discarded() || !body.is_object() || !body.contains("error") ||
      body.contains("type") || !body["error"].is_object()) {
    return std::nullopt;  // not error_response's shape (or already rewritten)
  }
  const auto& message = body["error"].find("message");
  return message != body["error"].end() && message->is_string() ? message->get<std::string>()
                                                                : std::string("request failed");
}

}  // namespace

void reshape_as_anthropic_error(HttpResponse& response) {
  if (const auto text = openai_error_message(response)) {
    response.body = request_json::dump(anthropic_error_json(response.status, *text));
  }
}

bool is_ollama_path(std::string_view path) { return path.starts_with("/api/"); }

ErrorReshape error_reshape_for(std::string_view path) {
  path = path.substr(0, path.find('?'));
  if (is_anthropic_path(path)) return reshape_as_anthropic_error;
  if (is_ollama_path(path)) return reshape_as_ollama_error;
  return nullptr;
}

void reshape_as_ollama_error(HttpResponse& response) {
  if (const auto text = openai_error_message(response)) {
    response.body = request_json::dump(nlohmann::ordered_json{{"error", *text}});
  }
}

}  // namespace sgl::server
