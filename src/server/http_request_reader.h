// RequestReader (internal to the HTTP server; includes Boost): parses requests one at a time from
// bytes its caller reads, under the server's framing rules and buffering bounds (http_framing.h).
#pragma once

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "server/http_framing.h"

namespace sgl::server::detail {

class RequestReader {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;

  struct Limits {
    size_t max_header_bytes = 0;  // a larger header gets 431
    uint64_t max_body_bytes = 0;  // a larger body gets 413
  };

  enum class Event {
    kNeedMore,  // every byte given that could be parsed was: read more, call again with the rest
    kHeader,    // the header is complete and accepted (header() holds it): call again
    kDone,      // the request is complete: take it with release()
    kError,     // error() says what to answer; the connection must close afterwards
  };

  explicit RequestReader(Limits limits);
  // NOTE: not copyable or movable: the parser holds a reference to a callback that points here.
  RequestReader(const RequestReader&) = delete;
  RequestReader& operator=(const RequestReader&) = delete;

  void start();  // begins the next request (the previous one is dropped)

  // Parses the front of `data`, the bytes not consumed by earlier calls; sets `consumed` to the
  // number it used. Any number of bytes may be given: a chunked body is parsed at most
  // kMaxChunkLineBytes at a time, so no input can make it hold more than that unparsed.
  // NOTE: may throw (std::bad_alloc; std::length_error from the parser on a field the bounds
  // should exclude): the caller's boundary catches.
  Event parse(std::string_view data, size_t& consumed);

  const FramingVerdict& error() const { return error_; }
  const Request& header() const { return parser_->get(); }  // after kHeader
  const Framing& framing() const { return framing_; }       // after kHeader
  bool done() const { return parser_->is_done(); }
  bool header_done() const { return parser_->is_header_done(); }  // header() holds it
  Request release();                                              // after kDone

 private:
  using Parser = boost::beast::http::request_parser<boost::beast::http::string_body>;
  using ChunkHeaderCallback =
      std::function<void(uint64_t, boost::beast::string_view, boost::beast::error_code&)>;

  FramingVerdict check_header() const;
  size_t field_count() const;

  Limits limits_;
  std::optional<Parser> parser_;
  ChunkHeaderCallback on_chunk_header_;
  size_t extension_bytes_ = 0;       // of this request's chunks so far
  uint64_t chunked_body_bytes_ = 0;  // the sizes of this request's chunks so far
  bool header_reported_ = false;
  size_t header_fields_ = 0;  // counted at kHeader: more at the end means a trailer
  Framing framing_;
  FramingVerdict error_;
};

}  // namespace sgl::server::detail
