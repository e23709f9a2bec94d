// CORS: which browser origins may call the API, and the preflight answer (SGLang allows every
// origin; --allowed-origins restricts them).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "server/http_types.h"

namespace sgl::server {

struct CorsPolicy {
  // Origins allowed to read responses ("https://app.example:8080"); "*" allows every origin.
  std::vector<std::string> allowed_origins = {"*"};
};

// Parses --allowed-origins: a JSON list of strings (vLLM's form) or comma-separated origins.
Result<CorsPolicy> parse_allowed_origins(std::string_view text);

// The Access-Control-Allow-Origin value for a request from `origin`: "*" when every origin is
// allowed, the origin itself when it is listed; nullopt for a request without Origin (not a
// cross-origin browser call) or from an origin not allowed (the browser then refuses).
std::optional<std::string> cors_allow_origin(const CorsPolicy& policy,
                                             std::optional<std::string_view> origin);

// Whether `request` is a CORS preflight (OPTIONS with Origin and
// Access-Control-Request-Method).
bool is_cors_preflight(const HttpRequest& request);
// The preflight's answer: 204 allowing any method and the requested headers for a day, or 403
// for an origin not allowed.
HttpResponse cors_preflight_response(const CorsPolicy& policy, const HttpRequest& request);

}  // namespace sgl::server
