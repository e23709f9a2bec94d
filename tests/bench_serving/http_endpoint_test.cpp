// Base URL parsing.
#include "bench_serving/http_endpoint.h"

#include <gtest/gtest.h>

namespace sgl::bench_serving {
namespace {

TEST(HttpEndpoint, ParsesBaseUrls) {
  auto e = parse_base_url("http://127.0.0.1:8000/api/");
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ(e->host, "127.0.0.1");
  EXPECT_EQ(e->port, "8000");
  EXPECT_EQ(e->path_prefix, "/api");
  EXPECT_EQ(e->url(), "http://127.0.0.1:8000/api");
  e = parse_base_url("http://localhost");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->port, "80");
  EXPECT_EQ(e->path_prefix, "");
  e = parse_base_url("http://[::1]:30000");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->url(), "http://[::1]:30000");
  EXPECT_FALSE(parse_base_url("https://example.com").ok());
  EXPECT_FALSE(parse_base_url("http://host:99999").ok());
  EXPECT_FALSE(parse_base_url("http://:80").ok());
}

}  // namespace
}  // namespace sgl::bench_serving
