// Base URL parsing.
#include "bench_serving/http_endpoint.h"

#include <charconv>

namespace sgl::bench_serving {

std::string HttpEndpoint::url() const {
  const bool v6 = host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + host + "]" : host) + ":" + port + path_prefix;
}

Result<HttpEndpoint> parse_base_url(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return invalid_argument("--base-url must start with http:// (got '" + std::string(url) + "')");
  }
  std::string_view rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  HttpEndpoint e;
  e.path_prefix = std::string(path);
  // "[v6addr]:port", "host:port" or "host".
  size_t port_colon = std::string_view::npos;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return invalid_argument("--base-url: unclosed '['");
    e.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return invalid_argument("--base-url: bad host");
      port_colon = close + 1;
    }
  } else {
    port_colon = authority.rfind(':');
    e.host = std::string(authority.substr(0, port_colon));
  }
  if (port_colon != std::string_view::npos) {
    const std::string_view port = authority.substr(port_colon + 1);
    int value = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || ptr != port.data() + port.size() || value < 1 || value > 65535) {
      return invalid_argument("--base-url: bad port '" + std::string(port) + "'");
    }
    e.port = std::string(port);
  }
  if (e.host.empty()) return invalid_argument("--base-url: no host in '" + std::string(url) + "'");
  return e;
}

}  // namespace sgl::bench_serving
