// ApiAuth: SGLang's API keys. --api-key guards the ordinary routes; --admin-api-key the
// administrative ones (weights, cache flushes, pauses, aborts, logging), which take only it when
// set (else the API key, else nothing). Health, readiness and metrics routes are always open
// (probes and scrapers carry no secrets). A key comes as "Authorization: Bearer <key>" or, as
// Anthropic's clients send it, "x-api-key: <key>".
#pragma once

#include <string>
#include <utility>

#include "server/http_types.h"

namespace sgl::server {

enum class AuthLevel {
  kPublic,  // health, readiness, metrics
  kNormal,  // the API key when set
  kAdmin,   // the admin key when set, else the API key when set (SGLang's ADMIN_OPTIONAL)
};

class ApiAuth {
 public:
  ApiAuth(std::string api_key, std::string admin_api_key)  // empty: not set
      : api_key_(std::move(api_key)), admin_api_key_(std::move(admin_api_key)) {}

  // Whether `request` may use a route of `level` (else: 401).
  bool allows(const HttpRequest& request, AuthLevel level) const;

 private:
  static bool carries(const HttpRequest& request, const std::string& key);

  const std::string api_key_;
  const std::string admin_api_key_;
};

}  // namespace sgl::server
