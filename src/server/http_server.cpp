// HttpServer: listener, io thread pool and session registry over Boost.Asio.
#include "server/http_server.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <future>
#include <thread>
#include <vector>

#include "core/logging.h"
#include "core/open_file_limit.h"
#include "server/http_session.h"

namespace sgl::server {
namespace net = boost::asio;
using tcp = net::ip::tcp;

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return std::string_view(value);
  }
  return std::nullopt;
}

struct HttpServer::Impl {
  // NOTE: declared first so it outlives the io_context, whose destruction destroys sessions.
  detail::SessionHub hub;
  net::io_context ioc;
  net::executor_work_guard<net::io_context::executor_type> work{ioc.get_executor()};
  net::strand<net::io_context::executor_type> accept_strand{net::make_strand(ioc)};
  tcp::acceptor acceptor{accept_strand};
  net::steady_timer retry_timer{accept_strand};
  std::vector<std::thread> threads;
  int port = 0;
  bool stopped = false;

  void accept() {
    acceptor.async_accept(net::make_strand(ioc),
                          [this](boost::system::error_code ec, tcp::socket socket) {
                            if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
                            if (ec) {
                              // Out of descriptors (or a transient error): back off instead of
                              // spinning.
                              SGL_LOG_WARN << "accept failed: " << ec.message();
                              retry_timer.expires_after(std::chrono::milliseconds(50));
                              retry_timer.async_wait([this](boost::system::error_code wait_ec) {
                                if (!wait_ec) accept();
                              });
                              return;
                            }
                            try {
                              std::make_shared<detail::HttpSession>(std::move(socket), hub)->run();
                            } catch (const std::exception& e) {
                              SGL_LOG_ERROR << "cannot start an HTTP connection: " << e.what();
                            }
                            accept();
                          });
  }

  // An io thread. Sessions catch their own exceptions; one that still escapes a handler (from
  // the libraries under them) ends that handler, and with it its connection, never the process.
  void run_io() {
    for (;;) {
      try {
        ioc.run();
        return;
      } catch (const std::exception& e) {
        SGL_LOG_ERROR << "HTTP io thread: a handler threw (" << e.what() << "); continuing";
      } catch (...) {
        SGL_LOG_ERROR << "HTTP io thread: a handler threw; continuing";
      }
    }
  }

  Status listen(const HttpServerOptions& options) {
    boost::system::error_code ec;
    tcp::resolver resolver(ioc);
    auto results = resolver.resolve(options.host, std::to_string(options.port),
                                    tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec || results.empty()) {
      return invalid_argument("cannot resolve host '" + options.host + "': " + ec.message());
    }
    const tcp::endpoint endpoint = results.begin()->endpoint();
    const std::string where = options.host + ":" + std::to_string(options.port);
    if (acceptor.open(endpoint.protocol(), ec); ec) {
      return internal_error("cannot open a socket for " + where + ": " + ec.message());
    }
    acceptor.set_option(net::socket_base::reuse_address(true), ec);
    if (acceptor.bind(endpoint, ec); ec) {
      return invalid_argument("cannot bind " + where + ": " + ec.message());
    }
    if (acceptor.listen(options.listen_backlog, ec); ec) {
      return internal_error("cannot listen on " + where + ": " + ec.message());
    }
    port = acceptor.local_endpoint(ec).port();
    return Status::ok_status();
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<HttpServer>> HttpServer::start(const HttpServerOptions& options,
                                                      HttpHandler handler) {
  if (options.num_threads < 1) return invalid_argument("the HTTP server needs >= 1 thread");
  if (!raise_open_file_limit()) SGL_LOG_WARN << "cannot raise RLIMIT_NOFILE";
  auto impl = std::make_unique<Impl>();
  impl->hub.options = options;
  impl->hub.handler = std::move(handler);
  SGL_RETURN_IF_ERROR(impl->listen(options));
  net::post(impl->accept_strand, [p = impl.get()] { p->accept(); });
  for (int i = 0; i < options.num_threads; ++i) {
    impl->threads.emplace_back([p = impl.get()] { p->run_io(); });
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::port() const { return impl_->port; }

void HttpServer::stop_accepting() {
  impl_->hub.draining = true;
  std::promise<void> done;
  auto closed = done.get_future();
  net::post(impl_->accept_strand, [p = impl_.get(), &done] {
    boost::system::error_code ec;
    p->acceptor.close(ec);
    p->retry_timer.cancel();
    done.set_value();
  });
  if (!impl_->threads.empty()) closed.wait();
}

void HttpServer::stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  stop_accepting();
  std::vector<std::shared_ptr<detail::HttpSession>> sessions;
  {
    std::lock_guard lock(impl_->hub.mutex);
    for (auto& [ptr, weak] : impl_->hub.sessions) {
      if (auto s = weak.lock()) sessions.push_back(std::move(s));
    }
  }
  for (auto& s : sessions) s->force_close();
  sessions.clear();
  // Give the sessions a moment to run their close handlers, then stop the loop.
  for (int i = 0; i < 100 && open_connections() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  impl_->work.reset();
  impl_->ioc.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
}

size_t HttpServer::open_connections() const {
  std::lock_guard lock(impl_->hub.mutex);
  return impl_->hub.sessions.size();
}

}  // namespace sgl::server
