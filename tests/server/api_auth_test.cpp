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

TEST(ApiAuth, NoKeysOpenEverything) {
  const ApiAuth auth("", "");
  for (AuthLevel level : {AuthLevel::kPublic, AuthLevel::kNormal, AuthLevel::kAdmin}) {
    EXPECT_TRUE(auth.allows(kNone, level));
    EXPECT_TRUE(auth.allows(kApi, level));
  }
}

TEST(ApiAuth, TheApiKeyAloneGuardsOrdinaryAndAdminRoutes) {
  const ApiAuth auth("api", "");
  EXPECT_TRUE(auth.allows(kNone, AuthLevel::kPublic));
  for (AuthLevel level : {AuthLevel::kNormal, AuthLevel::kAdmin}) {
    EXPECT_FALSE(auth.allows(kNone, level));
    EXPECT_FALSE(auth.allows(kAdmin, level));
    EXPECT_TRUE(auth.allows(kApi, level));
  }
}

TEST(ApiAuth, TheAdminKeyAloneGuardsOnlyTheAdminRoutes) {
  const ApiAuth auth("", "admin");
  EXPECT_TRUE(auth.allows(kNone, AuthLevel::kNormal));
  EXPECT_FALSE(auth.allows(kNone, AuthLevel::kAdmin));
  EXPECT_FALSE(auth.allows(kApi, AuthLevel::kAdmin));
  EXPECT_TRUE(auth.allows(kAdmin, AuthLevel::kAdmin));
}

TEST(ApiAuth, WithBothKeysEachRouteTakesOnlyItsOwn) {
  const ApiAuth auth("api", "admin");
  EXPECT_TRUE(auth.allows(kApi, AuthLevel::kNormal));
  EXPECT_FALSE(auth.allows(kAdmin, AuthLevel::kNormal));
  EXPECT_FALSE(auth.allows(kApi, AuthLevel::kAdmin));
  EXPECT_TRUE(auth.allows(kAdmin, AuthLevel::kAdmin));
  EXPECT_TRUE(auth.allows(kNone, AuthLevel::kPublic));
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
