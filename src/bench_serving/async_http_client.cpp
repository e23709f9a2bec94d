// AsyncHttpClient on Boost.Asio C++20 coroutines and Beast: one coroutine per request on a strand
// of its own, so a few io_context threads drive thousands of streaming connections.
#include "bench_serving/async_http_client.h"

// clang-format off
// NOTE: Boost 1.74's awaitable.hpp uses std::exchange without including <utility>.
#include <utility>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
// clang-format on
#include <array>
#include <exception>
#include <limits>
#include <thread>

namespace sgl::bench_serving {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

// Body bytes read per step; SSE events are small, so this rarely fills.
constexpr size_t kReadChunkBytes = 16 * 1024;

Status transport_error(const char* step, const boost::system::error_code& ec) {
  if (ec == beast::error::timeout) return internal_error(std::string(step) + ": timed out");
  return internal_error(std::string(step) + ": " + ec.message());
}

}  // namespace

struct AsyncHttpClient::Impl {
  explicit Impl(int threads) : threads(threads), io(threads) {}

  const int threads;
  HttpEndpoint endpoint;
  asio::io_context io;
  asio::strand<asio::io_context::executor_type> control{io.get_executor()};
  tcp::resolver::results_type addresses;

  asio::awaitable<void> exchange(HttpRequestSpec spec, ResponseHandler* handler);
  asio::awaitable<Status> exchange_steps(HttpRequestSpec& spec, ResponseHandler* handler);
};

asio::awaitable<void> AsyncHttpClient::Impl::exchange(HttpRequestSpec spec,
                                                      ResponseHandler* handler) {
  Status status;
  try {
    status = co_await exchange_steps(spec, handler);
  } catch (const std::exception& e) {  // Beast throws on malformed header values, bad_alloc
    status = internal_error(std::string("request failed: ") + e.what());
  }
  handler->on_finish(status, Clock::now());
}

asio::awaitable<Status> AsyncHttpClient::Impl::exchange_steps(HttpRequestSpec& spec,
                                                              ResponseHandler* handler) {
  boost::system::error_code ec;
  // A fresh token per operation: Boost 1.74 cannot initiate from a const one.
  const auto on_error = [&ec] { return asio::redirect_error(asio::use_awaitable, ec); };
  beast::tcp_stream stream(co_await asio::this_coro::executor);
  if (spec.deadline != Clock::time_point::max()) stream.expires_at(spec.deadline);

  co_await stream.async_connect(addresses, on_error());
  if (ec) co_return transport_error("connect", ec);

  http::request<http::string_body> request(
      spec.method == "GET" ? http::verb::get : http::verb::post, spec.target, 11);
  request.set(http::field::host, endpoint.host + ":" + endpoint.port);
  request.set(http::field::user_agent, "sgl-bench");
  request.set(http::field::accept, "*/*");
  for (const auto& [name, value] : spec.headers) request.set(name, value);
  if (!spec.body.empty()) {
    request.set(http::field::content_type, "application/json");
    request.body() = std::move(spec.body);
  }
  request.prepare_payload();
  co_await http::async_write(stream, request, on_error());
  if (ec) co_return transport_error("send", ec);

  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  co_await http::async_read_header(stream, buffer, parser, on_error());
  if (ec) co_return transport_error("read header", ec);
  handler->on_status(parser.get().result_int(), Clock::now());

  std::array<char, kReadChunkBytes> chunk;
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    co_await http::async_read_some(stream, buffer, parser, on_error());
    // need_buffer: our chunk is full (or a body piece ended); hand it over and read on.
    if (ec == http::error::need_buffer) ec = {};
    if (ec) co_return transport_error("read body", ec);
    const size_t n = chunk.size() - parser.get().body().size;
    if (n > 0) handler->on_body(std::string_view(chunk.data(), n), Clock::now());
  }
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);  // best effort
  co_return Status::ok_status();
}

AsyncHttpClient::AsyncHttpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AsyncHttpClient::~AsyncHttpClient() = default;

Result<std::unique_ptr<AsyncHttpClient>> AsyncHttpClient::create(const HttpEndpoint& endpoint,
                                                                 int threads) {
  if (threads < 1) return invalid_argument("an HTTP client needs at least one thread");
  auto impl = std::make_unique<Impl>(threads);
  impl->endpoint = endpoint;
  boost::system::error_code ec;
  tcp::resolver resolver(impl->io);
  impl->addresses = resolver.resolve(endpoint.host, endpoint.port, ec);
  if (ec) {
    return not_found("cannot resolve " + endpoint.host + ":" + endpoint.port + ": " + ec.message());
  }
  return std::unique_ptr<AsyncHttpClient>(new AsyncHttpClient(std::move(impl)));
}

void AsyncHttpClient::start(HttpRequestSpec spec, ResponseHandler* handler) {
  asio::co_spawn(asio::make_strand(impl_->io), impl_->exchange(std::move(spec), handler),
                 asio::detached);
}

void AsyncHttpClient::call_at(Clock::time_point when, std::function<void()> fn) {
  // shared_ptr: the timer must live until its handler runs, which owns the only other copy.
  auto timer = std::make_shared<asio::steady_timer>(impl_->io, when);
  timer->async_wait(asio::bind_executor(
      impl_->control, [timer, fn = std::move(fn)](const boost::system::error_code&) { fn(); }));
}

void AsyncHttpClient::post(std::function<void()> fn) { asio::post(impl_->control, std::move(fn)); }

void AsyncHttpClient::run() {
  impl_->io.restart();
  std::vector<std::thread> helpers;
  for (int i = 1; i < impl_->threads; ++i) helpers.emplace_back([this] { impl_->io.run(); });
  impl_->io.run();
  for (std::thread& t : helpers) t.join();
}

namespace {

class CollectingHandler final : public ResponseHandler {
 public:
  void on_status(int status, Clock::time_point) override { reply.status = status; }
  void on_body(std::string_view bytes, Clock::time_point) override { reply.body += bytes; }
  void on_finish(const Status& transport, Clock::time_point) override { status = transport; }

  HttpReply reply;
  Status status;
};

}  // namespace

Result<HttpReply> fetch(const HttpEndpoint& endpoint, HttpRequestSpec spec) {
  SGL_ASSIGN_OR_RETURN(std::unique_ptr<AsyncHttpClient> client, AsyncHttpClient::create(endpoint));
  CollectingHandler handler;
  client->start(std::move(spec), &handler);
  client->run();
  if (!handler.status.ok()) return handler.status;
  return std::move(handler.reply);
}

}  // namespace sgl::bench_serving
