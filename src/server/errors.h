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
// The same error as an event of a stream already answered 200 ("data: {\"error\": ...}"), as
// SGLang sends a generation that failed while streaming.
std::string error_event(int status, std::string_view message);

}  // namespace sgl::server
