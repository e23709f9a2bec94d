// HTTP/1.1 request framing rules: which header combinations the server accepts (RFC 9112 §3.2,
// §6.1, §6.3) and the bounds on what one request may make it buffer or wait for. Pure: no I/O.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace sgl::server {

// The parser never sees more than this many bytes of a chunked body at once, so a chunk-size
// line (with its extensions), or the trailer section, longer than this is refused (400).
inline constexpr size_t kMaxChunkLineBytes = 4096;
// All chunk extensions of one request together: they carry nothing we use, and the bound keeps
// a client from sending unbounded framing beside a small body.
inline constexpr size_t kMaxChunkExtensionBytes = 4096;
// NOTE: trailer fields are refused (400), not merged: the parser would merge them into the
// header, where a handler could mistake them for header fields (RFC 9110 §6.5.1).

// The slowest upload we still serve: 256 KiB/s (2 Mbit/s, below any uplink we mean to serve).
// A body gets one read timeout plus its size at this rate (see body_time_allowance()).
inline constexpr uint64_t kMinBodyBytesPerSecond = uint64_t{256} << 10;

struct HeaderField {
  std::string_view name;  // any case
  std::string_view value;
};

// The body framing a request header declares.
struct Framing {
  bool chunked = false;
  std::optional<uint64_t> content_length;  // absent: no body (unless chunked)
};

// Accepted (status 0) or the answer to give before closing the connection.
struct FramingVerdict {
  int status = 0;
  std::string message;
  Framing framing;  // when accepted

  bool ok() const { return status == 0; }
};

// Judges a request header: HTTP/1.1 needs exactly one Host, no version more than one; a
// Transfer-Encoding must end in chunked (else 400), apply it once, use no other coding (501),
// and come without Content-Length in an HTTP/1.1 request (else 400); Content-Length must be
// decimal and agree with itself (repeats of one value are accepted, RFC 9110 §8.6); a declared
// body past max_body_bytes gets 413. `version` is 10 or 11.
// `s` without leading and trailing optional whitespace (spaces and tabs, RFC 9110's OWS).
std::string_view trim_ows(std::string_view s);

FramingVerdict check_request_framing(unsigned version, std::span<const HeaderField> fields,
                                     uint64_t max_body_bytes);

// How long a body of `bytes` may take to arrive: read_timeout + bytes / kMinBodyBytesPerSecond.
// A trickling client (a byte every few seconds) is dropped after about one read timeout, while
// large bodies get time in proportion to their size.
std::chrono::milliseconds body_time_allowance(std::chrono::milliseconds read_timeout,
                                              uint64_t bytes);

}  // namespace sgl::server
