// OpenAI-style error responses: {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <string_view>

#include "core/status.h"
#include "server/http_types.h"

namespace sgl::server {

// The HTTP status for a Status code: bad input 400, not found 404, a full queue 503, else 500.
int http_status_for(StatusCode code);

// An error response; `param` names the offending request field when known.
HttpResponse error_response(int status, std::string_view message, std::string_view param = {});
HttpResponse error_response(const Status& status);
// Anthropic's shape ({"type": "error", "error": {"type", "message"}}), SGLang's error types by
// status: the /v1/messages routes' errors (the router rewrites theirs with
// reshape_as_anthropic_error) and their streams' error events.
HttpResponse anthropic_error_response(int status, std::string_view message);
// /v1/messages and the paths below it.
bool is_anthropic_path(std::string_view path);
// An error_response (OpenAI's shape) rewritten in Anthropic's, its status and headers kept; any
// other response is left as it is.
void reshape_as_anthropic_error(HttpResponse& response);
// Ollama's API (/api/...): its errors are {"error": "message"} (the router rewrites them with
// reshape_as_ollama_error, as the Anthropic paths' above).
bool is_ollama_path(std::string_view path);
void reshape_as_ollama_error(HttpResponse& response);
// The rewrite of error responses on `path` (the request target, a query string allowed):
// Anthropic's or Ollama's shape; null where OpenAI's stays.
using ErrorReshape = void (*)(HttpResponse&);
ErrorReshape error_reshape_for(std::string_view path);
// The same error as an event of a stream already answered 200 ("data: {\"error\": ...}"), as
// SGLang sends a generation that failed while streaming.
std::string error_event(int status, std::string_view message);

}  // namespace sgl::server
