// RequestReader: Beast's request parser under the server's framing rules and bounds.
#include "server/http_request_reader.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

namespace sgl::server::detail {
namespace beast = boost::beast;
namespace http = boost::beast::http;

namespace {

std::string_view view(beast::string_view s) { return {s.data(), s.size()}; }

FramingVerdict parse_error(const beast::error_code& ec) {
  if (ec == http::error::header_limit) return {431, "request header fields too large", {}};
  if (ec == http::error::body_limit) return {413, "request body too large", {}};
  if (ec == http::error::bad_version) {
    return {505, "HTTP version not supported (HTTP/1.0 and HTTP/1.1 are)", {}};
  }
  return {400, "malformed HTTP request: " + ec.message(), {}};
}

}  // namespace

RequestReader::RequestReader(Limits limits) : limits_(limits) {
  on_chunk_header_ = [this](uint64_t size, beast::string_view extensions, beast::error_code& ec) {
    if (size > limits_.max_body_bytes - chunked_body_bytes_) {
      error_ = parse_error(http::error::body_limit);
      ec = http::error::body_limit;
      return;
    }
    chunked_body_bytes_ += size;
    extension_bytes_ += extensions.size();
    if (extension_bytes_ > kMaxChunkExtensionBytes) {
      error_ = {400,
                "chunk extensions longer than " + std::to_string(kMaxChunkExtensionBytes) +
                    " bytes in all",
                {}};
      ec = http::error::bad_chunk_extension;
    }
  };
  start();
}

void RequestReader::start() {
  parser_.emplace();
  parser_->header_limit(
      static_cast<uint32_t>(std::min<size_t>(limits_.max_header_bytes, UINT32_MAX)));
  // NOTE: no body limit until the header is judged, so that a declared Content-Length past it
  // gets the framing check's 413 with its sizes; a chunked body is limited from then on. (Not
  // boost::none: Beast 1.74 compares a Content-Length with it as larger than "no limit".)
  parser_->body_limit(UINT64_MAX);
  parser_->on_chunk_header(on_chunk_header_);
  extension_bytes_ = 0;
  chunked_body_bytes_ = 0;
  header_reported_ = false;
  header_fields_ = 0;
  framing_ = {};
  error_ = {};
}

RequestReader::Event RequestReader::parse(std::string_view data, size_t& consumed) {
  consumed = 0;
  if (!error_.ok()) return Event::kError;
  for (;;) {
    if (parser_->is_header_done() && !header_reported_) {
      header_reported_ = true;
      header_fields_ = field_count();
      error_ = check_header();
      if (!error_.ok()) return Event::kError;
      framing_ = error_.framing;
      // NOTE: a chunked body is limited by the chunk-header callback, not by Beast: Beast 1.74
      // takes a chunk's size off its limit before parsing the extensions, and again on each
      // retry while an unterminated quoted extension waits for more bytes, so how the bytes
      // arrived decided between 400 and 413.
      if (framing_.chunked) {
        parser_->body_limit(boost::none);
      } else {
        parser_->body_limit(limits_.max_body_bytes);
      }
      return Event::kHeader;
    }
    if (parser_->is_done()) {
      if (field_count() != header_fields_) {
        error_ = {400, "trailer fields are not supported", {}};
        return Event::kError;
      }
      return Event::kDone;
    }
    const std::string_view rest = data.substr(consumed);
    const bool in_chunks = parser_->is_header_done() && parser_->chunked();
    const size_t window = in_chunks ? std::min(rest.size(), kMaxChunkLineBytes) : rest.size();
    if (window == 0) return Event::kNeedMore;
    beast::error_code ec;
    const size_t used = parser_->put(boost::asio::const_buffer(rest.data(), window), ec);
    consumed += used;
    if (ec == http::error::need_more) {
      if (used > 0) continue;
      if (in_chunks && window == kMaxChunkLineBytes) {
        error_ = {400,
                  "a chunk-size line or the trailer is longer than " +
                      std::to_string(kMaxChunkLineBytes) + " bytes",
                  {}};
        return Event::kError;
      }
      return Event::kNeedMore;
    }
    if (ec) {
      if (error_.ok()) error_ = parse_error(ec);
      return Event::kError;
    }
  }
}

RequestReader::Request RequestReader::release() { return parser_->release(); }

FramingVerdict RequestReader::check_header() const {
  const Request& req = parser_->get();
  std::vector<HeaderField> fields;
  for (const auto& field : req) {
    fields.push_back({view(field.name_string()), view(field.value())});
  }
  FramingVerdict verdict = check_request_framing(req.version(), fields, limits_.max_body_bytes);
  if (!verdict.ok()) return verdict;
  // NOTE: Beast frames the body by its own reading of the header; where it reads it otherwise
  // than the rules above, the request is refused rather than framed two ways.
  const auto beast_length = parser_->content_length();
  const std::optional<uint64_t> length =
      beast_length ? std::optional<uint64_t>(*beast_length) : std::nullopt;
  if (parser_->chunked() != verdict.framing.chunked || length != verdict.framing.content_length) {
    return {400, "ambiguous message framing", {}};
  }
  return verdict;
}

size_t RequestReader::field_count() const {
  const Request& req = parser_->get();
  return static_cast<size_t>(std::distance(req.begin(), req.end()));
}

}  // namespace sgl::server::detail
