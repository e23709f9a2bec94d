// CORS origin checks and preflight answers.
#include "server/cors.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/errors.h"
#include "server/http_framing.h"

namespace sgl::server {

Result<CorsPolicy> parse_allowed_origins(std::string_view text) {
  CorsPolicy policy;
  policy.allowed_origins.clear();
  if (!text.empty() && text.front() == '[') {
    const nlohmann::json list = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!list.is_array()) return invalid_argument("--allowed-origins: not a JSON list of strings");
    for (const auto& item : list) {
      if (!item.is_string()) {
        return invalid_argument("--allowed-origins: not a JSON list of strings");
      }
      policy.allowed_origins.push_back(item.get<std::string>());
    }
  } else {
    size_t start = 0;
    while (start <= text.size()) {
      size_t comma = text.find(',', start);
      if (comma == std::string_view::npos) comma = text.size();
      const std::string_view origin = trim_ows(text.substr(start, comma - start));
      if (!origin.empty()) policy.allowed_origins.emplace_back(origin);
      start = comma + 1;
    }
  }
  for (const std::string& origin : policy.allowed_origins) {
    if (origin != "*" && origin.find("://") == std::string::npos) {
      return invalid_argument("--allowed-origins: '" + origin +
                              "' is not an origin (scheme://host[:port]) or *");
    }
  }
  return policy;
}

std::optional<std::string> cors_allow_origin(const CorsPolicy& policy,
                                             std::optional<std::string_view> origin) {
  if (!origin) return std::nullopt;
  const auto& allowed = policy.allowed_origins;
  if (std::find(allowed.begin(), allowed.end(), "*") != allowed.end()) return std::string("*");
  if (std::find(allowed.begin(), allowed.end(), *origin) != allowed.end()) {
    return std::string(*origin);
  }
  return std::nullopt;
}

bool is_cors_preflight(const HttpRequest& request) {
  return request.method == "OPTIONS" && request.header("origin") &&
         request.header("access-control-request-method");
}

HttpResponse cors_preflight_response(const CorsPolicy& policy, const HttpRequest& request) {
  const std::optional<std::string> allow = cors_allow_origin(policy, request.header("origin"));
  if (!allow) {
    return error_response(403, "origin '" + std::string(*request.header("origin")) +
                                   "' is not allowed (--allowed-origins)");
  }
  HttpResponse r;
  r.status = 204;
  r.content_type = "text/plain";
  r.headers = {{"Access-Control-Allow-Origin", *allow},
               {"Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS"},
               {"Access-Control-Max-Age", "86400"}};
  if (auto wanted = request.header("access-control-request-headers")) {
    r.headers.emplace_back("Access-Control-Allow-Headers", std::string(*wanted));
  }
  if (*allow != "*") r.headers.emplace_back("Vary", "Origin");
  return r;
}

}  // namespace sgl::server
