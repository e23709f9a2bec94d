// Request framing rules of the HTTP server (see http_framing.h).
#include "server/http_framing.h"

#include <vector>

namespace sgl::server {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// Appends the comma-separated elements of `value`, trimmed; false when one is empty (lists in
// framing fields are taken strictly: an ambiguity there is a smuggling vector).
bool split_list(std::string_view value, std::vector<std::string_view>& out) {
  for (;;) {
    const size_t comma = value.find(',');
    const std::string_view item = trim_ows(value.substr(0, comma));
    if (item.empty()) return false;
    out.push_back(item);
    if (comma == std::string_view::npos) return true;
    value.remove_prefix(comma + 1);
  }
}

// 1*DIGIT with at most 19 digits (so it fits in 64 bits).
std::optional<uint64_t> parse_decimal(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// uri-host [":" port] (RFC 3986): reg-name, IPv4 or an IP literal in brackets. Empty is valid.
bool valid_host(std::string_view s) {
  for (char c : s) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && std::string_view("-._~!$&'()*+,;=:[]%").find(c) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

FramingVerdict reject(int status, std::string message) { return {status, std::move(message), {}}; }

}  // namespace

std::string_view trim_ows(std::string_view s) {
  const auto ows = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && ows(s.back())) s.remove_suffix(1);
  return s;
}

FramingVerdict check_request_framing(unsigned version, std::span<const HeaderField> fields,
                                     uint64_t max_body_bytes) {
  int hosts = 0;
  bool has_transfer_encoding = false;
  bool has_content_length = false;
  std::vector<std::string_view> codings;
  std::vector<std::string_view> lengths;
  for (const HeaderField& f : fields) {
    if (iequals(f.name, "host")) {
      ++hosts;
      if (!valid_host(f.value)) return reject(400, "invalid Host header");
    } else if (iequals(f.name, "transfer-encoding")) {
      has_transfer_encoding = true;
      if (!split_list(f.value, codings)) return reject(400, "malformed Transfer-Encoding header");
    } else if (iequals(f.name, "content-length")) {
      has_content_length = true;
      if (!split_list(f.value, lengths)) return reject(400, "invalid Content-Length header");
    }
  }
  if (hosts > 1) return reject(400, "more than one Host header");
  if (hosts == 0 && version >= 11) return reject(400, "an HTTP/1.1 request needs a Host header");

  Framing framing;
  if (has_transfer_encoding) {
    // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing, and one with
    // both Transfer-Encoding and Content-Length is a smuggling attempt as often as not.
    if (version < 11) return reject(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (has_content_length) return reject(400, "both Transfer-Encoding and Content-Length");
    if (!iequals(codings.back(), "chunked")) {
      return reject(
          400, "Transfer-Encoding '" + std::string(codings.back()) + "' does not end in chunked");
    }
    const std::span<const std::string_view> inner(codings.data(), codings.size() - 1);
    for (std::string_view coding : inner) {
      if (iequals(coding, "chunked")) return reject(400, "chunked applied more than once");
    }
    if (!inner.empty()) {
      return reject(501, "transfer coding '" + std::string(inner.front()) + "' is not supported");
    }
    framing.chunked = true;
    return {0, {}, framing};
  }
  if (has_content_length) {
    for (std::string_view item : lengths) {
      const std::optional<uint64_t> n = parse_decimal(item);
      if (!n) return reject(400, "invalid Content-Length header");
      if (framing.content_length && *framing.content_length != *n) {
        return reject(400, "conflicting Content-Length values");
      }
      framing.content_length = n;
    }
    if (*framing.content_length > max_body_bytes) {
      return reject(413, "request body too large: " + std::to_string(*framing.content_length) +
                             " bytes (limit " + std::to_string(max_body_bytes) + ")");
    }
  }
  return {0, {}, framing};
}

std::chrono::milliseconds body_time_allowance(std::chrono::milliseconds read_timeout,
                                              uint64_t bytes) {
  // Whole milliseconds, rounded up; 2^64 bytes at 256 KiB/s is far inside 64-bit milliseconds.
  const uint64_t ms = (bytes / kMinBodyBytesPerSecond) * 1000 +
                      ((bytes % kMinBodyBytesPerSecond) * 1000 + kMinBodyBytesPerSecond - 1) /
                          kMinBodyBytesPerSecond;
  return read_timeout + std::chrono::milliseconds(static_cast<int64_t>(ms));
}

}  // namespace sgl::server
