// HttpEndpoint: where the benchmark sends requests (http:// only), from --base-url or host/port.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace sgl::bench_serving {

struct HttpEndpoint {
  std::string host;
  std::string port = "80";
  std::string path_prefix;  // "" or "/prefix" (no trailing slash), put before every path

  std::string url() const;  // "http://host:port/prefix"
};

// "http://host[:port][/prefix]"; https is refused (no TLS in this client).
Result<HttpEndpoint> parse_base_url(std::string_view url);

}  // namespace sgl::bench_serving
