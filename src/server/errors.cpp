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

}  // namespace sgl::server
