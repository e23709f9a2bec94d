// AsyncHttpClient: many concurrent HTTP/1.1 requests with streamed response bodies, and timers,
// driven by a few threads (Boost.Asio behind a pimpl).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench_serving/http_endpoint.h"
#include "core/status.h"

namespace sgl::bench_serving {

using Clock = std::chrono::steady_clock;

struct HttpRequestSpec {
  std::string method = "POST";  // GET or POST
  std::string target;           // path (with the endpoint's prefix already applied)
  std::string body;             // sent as application/json when not empty
  std::vector<std::pair<std::string, std::string>> headers;
  Clock::time_point deadline = Clock::time_point::max();  // the whole exchange, connect included
};

// What one request reports, in order: on_status once (unless the exchange fails before the
// response header), on_body for each piece of the (de-chunked) body as it arrives, then
// on_finish exactly once. One request's calls never overlap, but different requests' calls run
// on different threads at once. The times are when the bytes arrived.
class ResponseHandler {
 public:
  virtual ~ResponseHandler() = default;
  virtual void on_status(int status, Clock::time_point now) = 0;
  virtual void on_body(std::string_view bytes, Clock::time_point now) = 0;
  // `transport` is not OK when connecting, sending or receiving failed or timed out.
  virtual void on_finish(const Status& transport, Clock::time_point now) = 0;
};

class AsyncHttpClient {
 public:
  // Resolves the endpoint's host once; every request opens its own connection to it. `threads`
  // run the requests: one thread parsing every stream's events falls behind a server that
  // streams to hundreds of clients at once, and its late reads would count as server latency.
  static Result<std::unique_ptr<AsyncHttpClient>> create(const HttpEndpoint& endpoint,
                                                         int threads = 1);
  ~AsyncHttpClient();
  AsyncHttpClient(const AsyncHttpClient&) = delete;
  AsyncHttpClient& operator=(const AsyncHttpClient&) = delete;

  // Starts a request. `handler` is borrowed: it must live until its on_finish.
  void start(HttpRequestSpec spec, ResponseHandler* handler);
  // Runs `fn` at `when`, or as soon as possible, on the client's control strand: functions given
  // to call_at and post never run at the same time as each other.
  void call_at(Clock::time_point when, std::function<void()> fn);
  void post(std::function<void()> fn);
  // Runs requests and timers on the calling thread and threads - 1 more until none is left.
  void run();

 private:
  struct Impl;
  explicit AsyncHttpClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct HttpReply {
  int status = 0;
  std::string body;
};

// One blocking request with the whole body (e.g. GET /v1/models) on its own client.
Result<HttpReply> fetch(const HttpEndpoint& endpoint, HttpRequestSpec spec);

}  // namespace sgl::bench_serving
