// HttpServer: an asynchronous HTTP/1.1 server (keep-alive, limits, timeouts, event streams) on
// a small io thread pool. The implementation (Boost.Beast) stays behind a pimpl.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "core/status.h"
#include "server/cors.h"
#include "server/http_types.h"

namespace sgl::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 30000;  // 0: an ephemeral port (see HttpServer::port())
  int num_threads = 4;
  int listen_backlog = 4096;
  size_t max_body_bytes = size_t{32} << 20;    // larger bodies get 413
  size_t max_header_bytes = size_t{64} << 10;  // larger headers get 431
  // Time to read one request's header (including a keep-alive connection's idle wait); then
  // each read of its body must bring bytes within it, and the whole body arrive within it plus
  // its size at kMinBodyBytesPerSecond (http_framing.h). A slower client is disconnected.
  std::chrono::milliseconds read_timeout{30'000};
  // Time one write may take (a client that stops reading is disconnected).
  std::chrono::milliseconds write_timeout{60'000};
  // Browser origins allowed; preflights are answered here, before the handler.
  CorsPolicy cors;
};

class HttpServer {
 public:
  // Binds, listens and starts the io threads. `handler` runs on io threads, concurrently; it
  // must not block for long and must not throw (an exception becomes a 500).
  static Result<std::unique_ptr<HttpServer>> start(const HttpServerOptions& options,
                                                   HttpHandler handler);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;  // the bound port
  // Stops accepting connections; requests read afterwards are answered 503 and their
  // connections closed. Replies in progress continue.
  void stop_accepting();
  // Closes every connection (cancelling deferred replies) and joins the io threads.
  void stop();
  size_t open_connections() const;

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sgl::server
