// HttpServer over a loopback socket: an exception inside a connection's work closes that
// connection only (it used to escape into the io thread and end the process); a client
// connection's TCP options.
#include "server/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <stdexcept>
#include <string>

#include "server/http_session.h"

namespace sgl::server {
namespace {

// Sends `request` on a fresh connection and returns all the server sends until it closes.
std::string exchange(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;  // closed (or the 10 s timeout, which the caller's checks then fail)
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

class ThrowingReply : public DeferredReply {
 public:
  void start(std::function<void()>) override { throw std::runtime_error("start failed"); }
  Progress poll() override { return {}; }
  void cancel() override {}
};

TEST(HttpServer, AnExceptionClosesOnlyItsConnection) {
  HttpServerOptions options;
  options.port = 0;
  options.num_threads = 1;  // one io thread: had it died, nothing would answer afterwards
  auto started = HttpServer::start(options, [](HttpRequest& request) {
    if (request.path == "/throw-in-start") {
      return Reply::later(std::make_unique<ThrowingReply>(), false);
    }
    HttpResponse response;
    if (request.path == "/oversized-header") {  // the HTTP library refuses a field this long
      response.headers.emplace_back("X-Big", std::string(70'000, 'a'));
    }
    response.body = "ok";
    return Reply::of(response);
  });
  ASSERT_TRUE(started.ok()) << started.status().message();
  const auto server = std::move(started).value();
  const int port = server->port();
  EXPECT_EQ(exchange(port, "GET /throw-in-start HTTP/1.1\r\nHost: x\r\n\r\n"), "");
  EXPECT_EQ(exchange(port, "GET /oversized-header HTTP/1.1\r\nHost: x\r\n\r\n"), "");
  const std::string ok = exchange(port, "GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(ok.substr(0, 15), "HTTP/1.1 200 OK") << ok;
  EXPECT_EQ(ok.substr(ok.size() - 2), "ok");
}

TEST(HttpServer, ClientSocketsSendAtOnceAndProbeIdlePeers) {
  namespace net = boost::asio;
  net::io_context ioc;
  net::ip::tcp::acceptor acceptor(ioc, {net::ip::address_v4::loopback(), 0});
  net::ip::tcp::socket client(ioc), server(ioc);
  client.connect(acceptor.local_endpoint());
  acceptor.accept(server);
  auto get = [&](int level, int option) {
    int value = -1;
    socklen_t size = sizeof(value);
    EXPECT_EQ(::getsockopt(server.native_handle(), level, option, &value, &size), 0);
    return value;
  };
  EXPECT_EQ(get(IPPROTO_TCP, TCP_NODELAY), 0);  // the system's default: Nagle on
  detail::configure_client_socket(server);
  EXPECT_NE(get(IPPROTO_TCP, TCP_NODELAY), 0);
  EXPECT_NE(get(SOL_SOCKET, SO_KEEPALIVE), 0);
  EXPECT_EQ(get(IPPROTO_TCP, TCP_KEEPIDLE), 60);
  EXPECT_EQ(get(IPPROTO_TCP, TCP_KEEPINTVL), 10);
  EXPECT_EQ(get(IPPROTO_TCP, TCP_KEEPCNT), 6);
}

}  // namespace
}  // namespace sgl::server
