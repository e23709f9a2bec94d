// TCP sockets: resolve, listen, connect, exact reads and writes.
#include "distributed/tcp_socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "distributed/bootstrap.h"

namespace sgl::distributed {
namespace {

int remaining_ms(SocketClock::time_point deadline) {
  if (deadline == no_deadline()) return -1;  // poll: forever
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SocketClock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT32_MAX));
}

bool io_all(int fd, void* data, size_t n, bool write, SocketClock::time_point deadline) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    pollfd pfd{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
    const int ready = ::poll(&pfd, 1, remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    const ssize_t got = write ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, 0);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

struct AddrInfo {
  addrinfo* list = nullptr;
  ~AddrInfo() {
    if (list != nullptr) freeaddrinfo(list);
  }
};

Status resolve(const DistInitAddr& addr, bool passive, AddrInfo& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  const std::string port = std::to_string(addr.port);
  const int rc = ::getaddrinfo(addr.host.c_str(), port.c_str(), &hints, &out.list);
  if (rc != 0) {
    return invalid_argument("--dist-init-addr " + addr.to_string() + ": cannot resolve '" +
                            addr.host + "' (" + gai_strerror(rc) + ")");
  }
  return Status::ok_status();
}

}  // namespace

Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

int Socket::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

Result<Socket> listen_at(const DistInitAddr& addr, uint16_t* port) {
  AddrInfo info;
  SGL_RETURN_IF_ERROR(resolve(addr, true, info));
  std::string last_error = "no address";
  for (addrinfo* a = info.list; a != nullptr; a = a->ai_next) {
    Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.valid()) continue;
    const int one = 1;
    ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(s.fd(), a->ai_addr, a->ai_addrlen) == 0 && ::listen(s.fd(), 64) == 0) {
      sockaddr_storage bound{};
      socklen_t len = sizeof(bound);
      ::getsockname(s.fd(), reinterpret_cast<sockaddr*>(&bound), &len);
      if (port != nullptr) {
        *port =
            ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      }
      return s;
    }
    last_error = std::strerror(errno);
  }
  return invalid_argument("--dist-init-addr " + addr.to_string() + ": cannot listen there (" +
                          last_error + ")");
}

Result<Socket> connect_to(const DistInitAddr& addr, SocketClock::time_point deadline) {
  AddrInfo info;
  SGL_RETURN_IF_ERROR(resolve(addr, false, info));
  std::string last_error = "timed out";
  do {
    for (addrinfo* a = info.list; a != nullptr; a = a->ai_next) {
      // Non-blocking, so neither the connect nor a later send outlasts its deadline.
      Socket s(
          ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
      if (!s.valid()) continue;
      int error = ::connect(s.fd(), a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
      if (error == EINPROGRESS) {
        pollfd pfd{s.fd(), POLLOUT, 0};
        const int ready = ::poll(&pfd, 1, remaining_ms(deadline));
        socklen_t len = sizeof(error);
        if (ready <= 0) {
          error = ETIMEDOUT;
        } else if (::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &error, &len) != 0) {
          error = errno;
        }
      }
      if (error == 0) {
        const int one = 1;  // collectives are small messages, one after another
        ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return s;
      }
      last_error = std::strerror(error);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (SocketClock::now() < deadline);
  return internal_error("cannot connect to " + addr.to_string() + " (" + last_error + ")");
}

Socket accept_before(const Socket& listener, SocketClock::time_point deadline) {
  for (;;) {
    pollfd pfd{listener.fd(), POLLIN, 0};
    const int ready = ::poll(&pfd, 1, std::min(remaining_ms(deadline), 50));
    if (ready > 0) {
      Socket s(::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (s.valid()) {
        const int one = 1;
        ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return s;
      }
    }
    if (SocketClock::now() >= deadline) return Socket();
  }
}

bool read_all(const Socket& s, void* data, size_t n, SocketClock::time_point deadline) {
  return io_all(s.fd(), data, n, false, deadline);
}

bool write_all(const Socket& s, const void* data, size_t n, SocketClock::time_point deadline) {
  return io_all(s.fd(), const_cast<void*>(data), n, true, deadline);
}

}  // namespace sgl::distributed
