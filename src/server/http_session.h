// HttpSession (internal to the HTTP server; includes Boost): one client connection — reads
// requests, runs the handler, writes responses and event streams, watches for disconnects.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "server/http_request_reader.h"
#include "server/http_server.h"
#include "server/http_types.h"

namespace sgl::server::detail {

class HttpSession;

// A client connection's TCP options: no Nagle delay (each streamed event leaves at once instead
// of waiting for the peer's ACK of the one before, up to its delayed-ACK time) and keepalive
// probes after a minute idle (a vanished client's long non-streamed request ends within about
// two minutes instead of the system's two hours). Failures are logged, not fatal.
void configure_client_socket(boost::asio::ip::tcp::socket& socket);

// What every session of one server shares; outlives them all.
struct SessionHub {
  HttpServerOptions options;
  HttpHandler handler;
  std::atomic<bool> draining{false};

  std::mutex mutex;
  std::unordered_map<const HttpSession*, std::weak_ptr<HttpSession>> sessions;  // under mutex
};

// NOTE: shared_ptr-owned (enable_shared_from_this) because its pending asynchronous
// operations, not any one owner, decide how long it lives.
class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(boost::asio::ip::tcp::socket&& socket, SessionHub& hub);
  ~HttpSession();
  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;

  void run();          // registers with the hub and starts reading
  void force_close();  // any thread: closes the connection (cancels a deferred reply)

 private:
  using Response = boost::beast::http::response<boost::beast::http::string_body>;
  using Clock = std::chrono::steady_clock;

  // Runs one step of the state machine: an exception closes this connection (logged) instead
  // of escaping into the io thread.
  template <class Step>
  void guarded(Step&& step) noexcept;
  void fail(const char* what) noexcept;

  void read_request();  // starts the next request, parsing buffered bytes first
  void parse_buffered();
  bool on_header();  // false: it answered or is writing "100 Continue", parsing resumes later
  void read_more();
  void on_read(boost::beast::error_code ec, size_t bytes);
  void dispatch();
  void send(const HttpResponse& response);
  void on_sent(boost::beast::error_code ec);
  // Answers an error, then closes after draining what the client still sends.
  void reject(int status, const std::string& message);
  // The Access-Control-Allow-Origin this request's answer carries (none without Origin).
  void take_cors_origin(const RequestReader::Request& header);
  void linger();

  void start_deferred(Reply reply);
  std::string event_stream_head();  // sets chunked_ (and keep_alive_ for HTTP/1.0)
  void wake();                      // any thread
  void pump();
  void write_raw(std::string bytes);
  void on_raw_written(boost::beast::error_code ec);
  void finish_deferred();
  void watch();  // reads while a reply is pending, to notice a client that goes away
  void on_watch(boost::beast::error_code ec, size_t bytes);
  // What runs once a cancelled watch read completes: each starts a read of its own.
  enum class AfterWatch { kNothing, kReadRequest, kLinger };
  void after_watch(AfterWatch next);
  void next_request();        // reads the next request
  void linger_after_watch();  // closes after draining what the client still sends
  void close();

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;  // read, not yet parsed (pipelined requests included)
  SessionHub& hub_;
  RequestReader reader_;
  std::optional<Response> response_;
  std::unique_ptr<DeferredReply> deferred_;
  // NOTE: set while reading is paused for back-pressure (a request's worth buffered) and a
  // reply is pending: then no operation holds this session, so it holds itself until the reply
  // is done or the connection closes.
  std::shared_ptr<HttpSession> paused_self_;
  std::string out_;  // bytes of the raw write in flight
  // The current request's Access-Control-Allow-Origin, when it came from an allowed origin.
  std::optional<std::string> cors_origin_;
  unsigned version_ = 11;
  bool keep_alive_ = false;
  bool event_stream_ = false;
  std::string_view stream_content_type_;  // an event stream's Content-Type (a literal)
  bool chunked_ = false;
  bool stream_head_pending_ = false;  // an event stream whose 200 head is not sent yet
  bool writing_ = false;
  bool watching_ = false;
  bool deferred_done_ = false;
  AfterWatch after_watch_ = AfterWatch::kNothing;  // what waits for the cancelled watch read
  bool lingering_ = false;
  bool closed_ = false;
  size_t lingered_bytes_ = 0;
  std::chrono::steady_clock::time_point linger_until_;  // the linger's end, however bytes come
  // While a body is read: when it began, the bytes read for it, and when it must be complete
  // (body_time_allowance(): fixed by Content-Length, or growing with a chunked body's bytes).
  bool in_body_ = false;
  Clock::time_point body_start_{};
  Clock::time_point body_deadline_{};
  uint64_t body_bytes_ = 0;
  std::atomic<bool> wake_pending_{false};
};

}  // namespace sgl::server::detail
