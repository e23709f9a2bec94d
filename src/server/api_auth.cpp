// ApiAuth: which key a route level takes, and whether a request carries it.
#include "server/api_auth.h"

#include <string_view>

#include "core/ascii.h"

namespace sgl::server {
namespace {

// Compares without an early exit, so the key cannot be guessed byte by byte from timing.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

}  // namespace

bool ApiAuth::carries(const HttpRequest& request, const std::string& key) {
  if (const auto header = request.header("authorization")) {
    // "<scheme> <key>", the scheme Bearer in any case (RFC 9110: schemes are case-insensitive).
    const std::string_view value = *header;
    const size_t space = value.find(' ');
    if (space != std::string_view::npos && ascii_lowers_to(value.substr(0, space), "bearer") &&
        same_secret(value.substr(space + 1), key)) {
      return true;
    }
  }
  const auto x_api_key = request.header("x-api-key");
  return x_api_key && same_secret(*x_api_key, key);
}

bool ApiAuth::allows(const HttpRequest& request, AuthLevel level) const {
  switch (level) {
    case AuthLevel::kPublic:
      return true;
    case AuthLevel::kAdmin:
      // With both keys set only the admin key opens these (SGLang's rule).
      if (!admin_api_key_.empty()) return carries(request, admin_api_key_);
      [[fallthrough]];
    case AuthLevel::kNormal:
      return api_key_.empty() || carries(request, api_key_);
  }
  return false;
}

}  // namespace sgl::server
