// HttpSession: the per-connection state machine of the HTTP server.
#include "server/http_session.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <utility>

#include "core/ascii.h"
#include "core/logging.h"
#include "server/errors.h"
#include "server/http_framing.h"

namespace sgl::server::detail {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;

namespace {

// After an error answer we keep reading (and discarding) what the client still sends, so that
// it sees the answer rather than a connection reset: while bytes keep coming (each read within
// kLingerIdle), up to kMaxLingerBytes and kMaxLinger in all (a client trickling a byte at a time
// must not hold the connection open for good).
constexpr auto kLingerIdle = std::chrono::seconds(2);
constexpr auto kMaxLinger = std::chrono::seconds(10);
constexpr size_t kMaxLingerBytes = size_t{256} << 20;
// Bytes asked of the socket per read while a request is read.
constexpr size_t kReadBytes = size_t{64} << 10;

std::string chunk(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  std::string out = size;
  out += data;
  out += "\r\n";
  return out;
}

// NOTE: Boost 1.74's Beast uses boost::string_view, not std::string_view.
std::string_view view(beast::string_view s) { return {s.data(), s.size()}; }

std::string_view view(const beast::flat_buffer& b) {
  return {static_cast<const char*>(b.data().data()), b.size()};
}

}  // namespace

void configure_client_socket(net::ip::tcp::socket& socket) {
  boost::system::error_code ec;
  socket.set_option(net::ip::tcp::no_delay(true), ec);
  if (!ec) socket.set_option(net::socket_base::keep_alive(true), ec);
  // Idle seconds before the first probe, seconds between probes, probes before giving up.
  constexpr std::pair<int, int> kProbes[] = {
      {TCP_KEEPIDLE, 60}, {TCP_KEEPINTVL, 10}, {TCP_KEEPCNT, 6}};
  for (const auto& [option, value] : kProbes) {
    if (ec) break;
    if (::setsockopt(socket.native_handle(), IPPROTO_TCP, option, &value, sizeof(value)) != 0) {
      ec = boost::system::error_code(errno, boost::system::system_category());
    }
  }
  if (ec) SGL_LOG_WARN << "cannot set a connection's TCP options: " << ec.message();
}

HttpSession::HttpSession(net::ip::tcp::socket&& socket, SessionHub& hub)
    : stream_(std::move(socket)),
      hub_(hub),
      reader_({hub.options.max_header_bytes, hub.options.max_body_bytes}) {
  configure_client_socket(stream_.socket());
}

HttpSession::~HttpSession() {
  if (deferred_) deferred_->cancel();
  std::lock_guard lock(hub_.mutex);
  hub_.sessions.erase(this);
}

template <class Step>
void HttpSession::guarded(Step&& step) noexcept {
  try {
    step();
  } catch (const std::exception& e) {
    fail(e.what());
  } catch (...) {
    fail("unknown exception");
  }
}

void HttpSession::fail(const char* what) noexcept {
  try {
    SGL_LOG_ERROR << "HTTP connection closed after an internal error: " << what;
  } catch (...) {  // NOTE: logging failed too (out of memory?): close all the same
  }
  try {
    close();
  } catch (...) {  // NOTE: nothing more can be done for this connection
  }
}

void HttpSession::run() {
  {
    std::lock_guard lock(hub_.mutex);
    hub_.sessions.emplace(this, weak_from_this());
  }
  beast::error_code ec;
  stream_.socket().set_option(net::ip::tcp::no_delay(true), ec);
  net::dispatch(stream_.get_executor(),
                [self = shared_from_this()] { self->guarded([&] { self->read_request(); }); });
}

void HttpSession::force_close() {
  net::post(stream_.get_executor(),
            [self = shared_from_this()] { self->guarded([&] { self->close(); }); });
}

void HttpSession::read_request() {
  if (closed_) return;
  reader_.start();
  in_body_ = false;
  cors_origin_.reset();
  stream_.expires_after(hub_.options.read_timeout);  // for the whole header
  parse_buffered();
}

void HttpSession::parse_buffered() {
  for (;;) {
    size_t used = 0;
    const RequestReader::Event event = reader_.parse(view(buffer_), used);
    buffer_.consume(used);
    switch (event) {
      case RequestReader::Event::kNeedMore:
        return read_more();
      case RequestReader::Event::kError:
        // A browser reads a 413 only with the CORS header; a 431's header is not parsed.
        if (reader_.header_done()) take_cors_origin(reader_.header());
        return reject(reader_.error().status, reader_.error().message);
      case RequestReader::Event::kDone:
        return dispatch();
      case RequestReader::Event::kHeader:
        if (!on_header()) return;
        break;
    }
  }
}

void HttpSession::take_cors_origin(const RequestReader::Request& header) {
  const auto origin = header.find(http::field::origin);
  cors_origin_ = cors_allow_origin(hub_.options.cors, origin == header.end()
                                                          ? std::nullopt
                                                          : std::optional(view(origin->value())));
}

bool HttpSession::on_header() {
  const auto& req = reader_.header();
  version_ = req.version();
  take_cors_origin(req);
  if (hub_.draining.load()) {
    reject(503, "the server is shutting down");
    return false;
  }
  in_body_ = true;
  body_bytes_ = 0;
  body_start_ = Clock::now();
  body_deadline_ = body_start_ + body_time_allowance(hub_.options.read_timeout,
                                                     reader_.framing().content_length.value_or(0));
  // An HTTP/1.0 request's Expect is ignored (RFC 9110 10.1.1): its client knows no 1xx.
  if (version_ >= 11 && beast::iequals(req[http::field::expect], "100-continue") &&
      !reader_.done()) {
    out_ = "HTTP/1.1 100 Continue\r\n\r\n";
    stream_.expires_after(hub_.options.write_timeout);
    net::async_write(stream_, net::buffer(out_),
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       self->guarded([&] {
                         if (ec) return self->close();
                         self->parse_buffered();
                       });
                     });
    return false;
  }
  return true;
}

// Each read must bring bytes within the read timeout (a stalled client is dropped), and a body
// must be complete by its deadline (a trickling one too).
void HttpSession::read_more() {
  if (closed_) return;
  if (in_body_) {
    const auto now = Clock::now();
    if (now >= body_deadline_) return close();
    stream_.expires_after(
        std::min<Clock::duration>(hub_.options.read_timeout, body_deadline_ - now));
  }
  stream_.async_read_some(buffer_.prepare(kReadBytes),
                          [self = shared_from_this()](beast::error_code ec, size_t n) {
                            self->guarded([&] { self->on_read(ec, n); });
                          });
}

void HttpSession::on_read(beast::error_code ec, size_t bytes) {
  if (ec) return close();  // the client went away, or timed out: a partial request is dropped
  buffer_.commit(bytes);
  if (in_body_) {
    body_bytes_ += bytes;
    if (reader_.framing().chunked) {
      body_deadline_ = body_start_ + body_time_allowance(hub_.options.read_timeout, body_bytes_);
    }
  }
  parse_buffered();
}

void HttpSession::dispatch() {
  stream_.expires_never();
  in_body_ = false;
  http::request<http::string_body> req = reader_.release();
  // NOTE: HEAD is answered like any unsupported method, with a body; closing keeps the
  // connection's framing sane for the client.
  keep_alive_ = req.keep_alive() && !hub_.draining.load() && req.method() != http::verb::head;
  HttpRequest request;
  request.method = std::string(view(req.method_string()));
  const std::string_view target = view(req.target());
  const size_t q = target.find('?');
  request.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) request.query = std::string(target.substr(q + 1));
  for (const auto& field : req) {
    request.headers.emplace_back(ascii_lower(view(field.name_string())),
                                 std::string(view(field.value())));
  }
  request.body = std::move(req.body());
  if (is_cors_preflight(request)) return send(cors_preflight_response(hub_.options.cors, request));

  Reply reply;
  try {
    reply = hub_.handler(request);
  } catch (const std::exception& e) {
    SGL_LOG_ERROR << "handler threw: " << e.what();
    reply = Reply::of(error_response(500, "internal error"));
  } catch (...) {
    reply = Reply::of(error_response(500, "internal error"));
  }
  if (reply.deferred) return start_deferred(std::move(reply));
  send(reply.response);
}

void HttpSession::send(const HttpResponse& r) {
  if (closed_) return;
  response_.emplace(static_cast<http::status>(r.status), version_);
  response_->set(http::field::server, "sgl.cpp");
  response_->set(http::field::content_type, r.content_type);
  for (const auto& [name, value] : r.headers) response_->set(name, value);
  if (cors_origin_ &&
      response_->find(http::field::access_control_allow_origin) == response_->end()) {
    response_->set(http::field::access_control_allow_origin, *cors_origin_);
    if (*cors_origin_ != "*") response_->set(http::field::vary, "Origin");
  }
  if (hub_.draining.load()) keep_alive_ = false;  // the connection closes after this answer
  response_->keep_alive(keep_alive_);
  response_->body() = r.body;
  response_->prepare_payload();
  writing_ = true;
  stream_.expires_after(hub_.options.write_timeout);
  http::async_write(stream_, *response_, [self = shared_from_this()](beast::error_code ec, size_t) {
    self->guarded([&] { self->on_sent(ec); });
  });
}

void HttpSession::on_sent(beast::error_code ec) {
  writing_ = false;
  response_.reset();
  if (ec) return close();
  stream_.expires_never();
  if (lingering_) return linger();
  if (deferred_) {  // a non-streaming deferred reply was the response
    deferred_.reset();
  }
  if (!keep_alive_ || hub_.draining.load()) return linger_after_watch();
  next_request();
}

void HttpSession::reject(int status, const std::string& message) {
  keep_alive_ = false;
  lingering_ = true;
  in_body_ = false;
  HttpResponse response = error_response(status, message);
  // The Anthropic and Ollama routes answer in their own error shape, also before the router
  // sees them (a body past the limit, a shutdown), once the request line was read.
  if (reader_.header_done()) {
    if (const ErrorReshape reshape = error_reshape_for(view(reader_.header().target()))) {
      reshape(response);
    }
  }
  send(std::move(response));
}

// Half-closes, then reads and discards until the client closes (or a time/size limit), so that
// a client still sending (a rejected body, pipelined requests after a "Connection: close" one)
// reads our answer instead of a reset.
void HttpSession::linger() {
  if (closed_) return;
  const auto now = std::chrono::steady_clock::now();
  if (lingered_bytes_ == 0) {
    beast::error_code ec;
    stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
    linger_until_ = now + kMaxLinger;
  }
  stream_.expires_at(std::min(now + kLingerIdle, linger_until_));
  buffer_.clear();
  stream_.async_read_some(buffer_.prepare(64 * 1024),
                          [self = shared_from_this()](beast::error_code ec, size_t n) {
                            self->guarded([&] {
                              self->lingered_bytes_ += n + 1;
                              if (ec || self->lingered_bytes_ > kMaxLingerBytes) {
                                return self->close();
                              }
                              self->linger();
                            });
                          });
}

void HttpSession::start_deferred(Reply reply) {
  deferred_ = std::move(reply.deferred);
  event_stream_ = reply.event_stream;
  stream_content_type_ = reply.stream_content_type;
  deferred_done_ = false;
  deferred_->start([weak = weak_from_this()] {
    if (auto self = weak.lock()) self->wake();
  });
  watch();
  // An event stream's 200 head goes out with its first bytes: until then the reply may still
  // turn out to be a plain response (a request that fails while it is prepared gets its 4xx).
  stream_head_pending_ = event_stream_;
  pump();
}

std::string HttpSession::event_stream_head() {
  chunked_ = version_ >= 11;
  if (!chunked_ || hub_.draining.load()) keep_alive_ = false;
  std::string head = version_ >= 11 ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.0 200 OK\r\n";
  head += "Server: sgl.cpp\r\nContent-Type: ";
  head += stream_content_type_;
  head += "\r\nCache-Control: no-cache\r\n";
  if (cors_origin_) {
    head += "Access-Control-Allow-Origin: " + *cors_origin_ + "\r\n";
    if (*cors_origin_ != "*") head += "Vary: Origin\r\n";
  }
  if (chunked_) head += "Transfer-Encoding: chunked\r\n";
  head += keep_alive_ ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return head;
}

void HttpSession::wake() {
  if (wake_pending_.exchange(true)) return;
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    self->wake_pending_ = false;
    self->guarded([&] { self->pump(); });
  });
}

void HttpSession::pump() {
  if (closed_ || writing_ || !deferred_ || deferred_done_) return;
  DeferredReply::Progress p;
  try {
    p = deferred_->poll();
  } catch (const std::exception& e) {
    SGL_LOG_ERROR << "deferred reply threw: " << e.what();
    return close();
  }
  if (p.done) deferred_done_ = true;
  if (stream_head_pending_ && p.response) {  // the stream never started: a plain response
    event_stream_ = false;
    stream_head_pending_ = false;
  }
  if (event_stream_) {
    if (stream_head_pending_ && p.data.empty() && !p.done) return;
    std::string head;
    if (stream_head_pending_) {
      head = event_stream_head();
      stream_head_pending_ = false;
    }
    std::string bytes =
        head + (p.data.empty() ? std::string() : (chunked_ ? chunk(p.data) : p.data));
    if (p.done && chunked_) bytes += "0\r\n\r\n";
    if (!bytes.empty()) return write_raw(std::move(bytes));
    if (p.done) finish_deferred();
    return;
  }
  if (p.done) send(p.response ? *p.response : error_response(500, "no response"));
}

void HttpSession::write_raw(std::string bytes) {
  if (closed_) return;
  out_ = std::move(bytes);
  writing_ = true;
  stream_.expires_after(hub_.options.write_timeout);
  net::async_write(stream_, net::buffer(out_),
                   [self = shared_from_this()](beast::error_code ec, size_t) {
                     self->guarded([&] { self->on_raw_written(ec); });
                   });
}

void HttpSession::on_raw_written(beast::error_code ec) {
  writing_ = false;
  if (ec) return close();
  stream_.expires_never();
  if (deferred_done_) return finish_deferred();
  pump();
}

void HttpSession::finish_deferred() {
  deferred_.reset();
  if (!keep_alive_ || hub_.draining.load()) return linger_after_watch();
  next_request();
}

void HttpSession::watch() {
  if (closed_ || watching_) return;
  // Bytes a client may pipeline while a reply is pending before we stop reading them: one
  // request of the largest size (what reading a request may hold anyway). Reading must go on
  // past a pipelined request, or its client's disconnect, queued behind unread bytes, is never
  // seen (and the generation runs on).
  if (buffer_.size() >= hub_.options.max_body_bytes + hub_.options.max_header_bytes) {
    paused_self_ = shared_from_this();  // back-pressure: the client waits until we read again
    return;
  }
  watching_ = true;
  stream_.expires_never();
  stream_.async_read_some(buffer_.prepare(kReadBytes),
                          [self = shared_from_this()](beast::error_code ec, size_t n) {
                            self->guarded([&] { self->on_watch(ec, n); });
                          });
}

void HttpSession::on_watch(beast::error_code ec, size_t bytes) {
  watching_ = false;
  if (closed_) return;
  if (!ec) buffer_.commit(bytes);  // a pipelined request: kept for the next read
  switch (std::exchange(after_watch_, AfterWatch::kNothing)) {
    case AfterWatch::kReadRequest:
      return read_request();
    case AfterWatch::kLinger:
      return linger();
    case AfterWatch::kNothing:
      break;
  }
  if (ec) return close();  // the client went away: cancel the reply
  if (deferred_) watch();
}

// Runs `next` (a read of its own) once the watch read, if any, has been cancelled: one read at a
// time on the stream.
void HttpSession::after_watch(AfterWatch next) {
  if (watching_) {
    after_watch_ = next;
    beast::error_code ec;
    stream_.socket().cancel(ec);
    return;
  }
  next == AfterWatch::kLinger ? linger() : read_request();
}

void HttpSession::linger_after_watch() { after_watch(AfterWatch::kLinger); }

void HttpSession::next_request() {
  // NOTE: the caller's handler holds this session, so dropping the self-hold here is safe.
  paused_self_.reset();
  after_watch(AfterWatch::kReadRequest);
}

void HttpSession::close() {
  paused_self_.reset();  // the caller's handler holds this session
  if (closed_) return;
  closed_ = true;
  if (deferred_) {
    deferred_->cancel();
    deferred_.reset();
  }
  beast::error_code ec;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
  stream_.close();
}

}  // namespace sgl::server::detail
