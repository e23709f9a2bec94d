// ApiAuth: SGLang's decision table for --api-key and --admin-api-key over the route levels, and
// the two ways a key comes (Bearer, x-api-key).
#include "server/api_auth.h"

#include <gtest/gtest.h>

namespace sgl::server {
namespace {

HttpRequest with(std::string name, std::string value) {
  HttpRequest r;
  r.method = "POST";
  r.path = "/x";
  if (!name.empty()) r.headers.emplace_back(std::move(name), std::move(value));
  return r;
}

const HttpRequest kNone = with("", "");
const HttpRequest kApi = with("authorization", "Bearer api");
const HttpRequest kAdmin = with("authorization", "Bearer admin");

// SGLang's table: which keys open which routes, for each way the server's keys are set.
TEST(ApiAuth, EachRouteLevelTakesTheKeysSGLangsDoes) {
  constexpr AuthLevel kPublic = AuthLevel::kPublic, kNormal = AuthLevel::kNormal,
                      kAdminLevel = AuthLevel::kAdmin;
  struct Case {
    const char* api_key;
    const char* admin_api_key;
    AuthLevel level;
    bool none, api, admin;  // allowed with no key, the API key, the admin key
  };
  const Case cases[] = {
      // No keys: everything is open.
      {"", "", kPublic, true, true, true},
      {"", "", kNormal, true, true, true},
      {"", "", kAdminLevel, true, true, true},
      // The API key alone guards the ordinary and the administrative routes.
      {"api", "", kPublic, true, true, true},
      {"api", "", kNormal, false, true, false},
      {"api", "", kAdminLevel, false, true, false},
      // The admin key alone guards only the administrative routes.
      {"", "admin", kNormal, true, true, true},
      {"", "admin", kAdminLevel, false, false, true},
      // Both: each route takes only its own key.
      {"api", "admin", kPublic, true, true, true},
      {"api", "admin", kNormal, false, true, false},
      {"api", "admin", kAdminLevel, false, false, true},
  };
  for (const Case& c : cases) {
    const ApiAuth auth(c.api_key, c.admin_api_key);
    SCOPED_TRACE(std::string("api_key '") + c.api_key + "', admin_api_key '" + c.admin_api_key +
                 "', level " + std::to_string(static_cast<int>(c.level)));
    EXPECT_EQ(auth.allows(kNone, c.level), c.none);
    EXPECT_EQ(auth.allows(kApi, c.level), c.api);
    EXPECT_EQ(auth.allows(kAdmin, c.level), c.admin);
  }
}

TEST(ApiAuth, AKeyComesAsBearerInAnyCaseOrAsXApiKey) {
  const ApiAuth auth("api", "");
  EXPECT_TRUE(auth.allows(with("authorization", "bearer api"), AuthLevel::kNormal));
  EXPECT_TRUE(auth.allows(with("authorization", "BEARER api"), AuthLevel::kNormal));
  EXPECT_TRUE(auth.allows(with("x-api-key", "api"), AuthLevel::kNormal));
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"authorization", "Basic api"},
                                                        {"authorization", "Bearer"},
                                                        {"authorization", "Bearer apx"},
                                                        {"authorization", "Bearer api "},
                                                        {"authorization", "api"},
                                                        {"x-api-key", "Bearer api"},
                                                        {"x-api-key", ""}}) {
    EXPECT_FALSE(auth.allows(with(name, value), AuthLevel::kNormal)) << name << ": " << value;
  }
}

}  // namespace
}  // namespace sgl::server
