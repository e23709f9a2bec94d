// The bootstrap flags' checks and the id exchange over TCP.
#include "distributed/bootstrap.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

namespace sgl::distributed {
namespace {

constexpr char kMagic[8] = {'S', 'G', 'L', 'B', 'O', 'O', 'T', '1'};
constexpr uint32_t kMaxBlob = 1 << 16;

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

// Reads or writes exactly n bytes before the deadline.
bool io_all(int fd, void* data, size_t n, bool write, Clock::time_point deadline) {
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

std::string DistInitAddr::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<DistInitAddr> parse_dist_init_addr(std::string_view text, bool allow_port_zero) {
  const auto bad = [&](const std::string& why) {
    return invalid_argument("--dist-init-addr '" + std::string(text) + "': " + why +
                            " (expected HOST:PORT, e.g. 10.0.0.1:50000, or [IPV6]:PORT)");
  };
  DistInitAddr out;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return bad("an IPv6 address needs [ADDR]:PORT");
    }
    out.host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad("no port");
    if (text.find(':') != colon) return bad("an IPv6 address needs brackets");
    out.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
  }
  if (out.host.empty()) return bad("no host");
  for (char c : out.host) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '/') return bad("not a host name");
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535 ||
      (value == 0 && !allow_port_zero)) {
    return bad("the port must be a number in [1, 65535]");
  }
  out.port = static_cast<uint16_t>(value);
  return out;
}

Status check_multi_node(const MultiNode& layout) {
  if (layout.nnodes < 1) {
    return invalid_argument("--nnodes must be >= 1, got " + std::to_string(layout.nnodes));
  }
  if (layout.node_rank < 0 || layout.node_rank >= layout.nnodes) {
    return invalid_argument("--node-rank " + std::to_string(layout.node_rank) +
                            " is not in [0, --nnodes " + std::to_string(layout.nnodes) + ")");
  }
  if (layout.nnodes > 1 && !layout.dist_init_addr) {
    return invalid_argument("--nnodes " + std::to_string(layout.nnodes) +
                            " needs --dist-init-addr HOST:PORT (where node 0 serves the NCCL id)");
  }
  return Status::ok_status();
}

Status check_single_node(const MultiNode& layout) {
  if (layout.nnodes == 1) return Status::ok_status();
  return unimplemented(
      "--nnodes " + std::to_string(layout.nnodes) +
      ": serving over several nodes is not implemented: the NCCL id exchange over "
      "--dist-init-addr exists, but no scheduler on node 0 drives ranks on other nodes (their "
      "batches would need sending); run one node with --tp-size up to its GPU count");
}

Result<std::unique_ptr<IdServer>> IdServer::start(const DistInitAddr& addr,
                                                  std::vector<uint8_t> blob, int clients) {
  if (blob.size() > kMaxBlob) return invalid_argument("bootstrap blob too large");
  AddrInfo info;
  SGL_RETURN_IF_ERROR(resolve(addr, true, info));
  std::unique_ptr<IdServer> server(new IdServer());
  std::string last_error = "no address";
  for (addrinfo* a = info.list; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 64) == 0) {
      server->listen_fd_ = fd;
      break;
    }
    last_error = std::strerror(errno);
    ::close(fd);
  }
  if (server->listen_fd_ < 0) {
    return invalid_argument("--dist-init-addr " + addr.to_string() + ": cannot listen there (" +
                            last_error + ")");
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(server->listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  server->port_ =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  server->blob_ = std::move(blob);
  server->clients_ = clients;
  server->thread_ = std::thread([s = server.get()] { s->serve(); });
  return server;
}

IdServer::~IdServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void IdServer::serve() {
  std::vector<uint8_t> reply(kMagic, kMagic + sizeof(kMagic));
  const uint32_t size = htonl(static_cast<uint32_t>(blob_.size()));
  const auto* size_bytes = reinterpret_cast<const uint8_t*>(&size);
  reply.insert(reply.end(), size_bytes, size_bytes + sizeof(size));
  reply.insert(reply.end(), blob_.begin(), blob_.end());
  while (!stop_ && served_ < clients_) {
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (::poll(&pfd, 1, 50) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    // A peer that is not ours (or too slow) is dropped and not counted.
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    char hello[sizeof(kMagic)];
    if (io_all(fd, hello, sizeof(hello), false, deadline) &&
        std::memcmp(hello, kMagic, sizeof(kMagic)) == 0 &&
        io_all(fd, reply.data(), reply.size(), true, deadline)) {
      ++served_;
    }
    ::close(fd);
  }
}

Status IdServer::wait(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (served_ < clients_) {
    if (Clock::now() >= deadline) {
      return internal_error("bootstrap: " + std::to_string(served_.load()) + " of " +
                            std::to_string(clients_) + " nodes fetched the NCCL id within " +
                            std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return Status::ok_status();
}

Result<std::vector<uint8_t>> fetch_id(const DistInitAddr& addr, std::chrono::milliseconds timeout) {
  AddrInfo info;
  SGL_RETURN_IF_ERROR(resolve(addr, false, info));
  const auto deadline = Clock::now() + timeout;
  std::string last_error = "timed out";
  do {
    for (addrinfo* a = info.list; a != nullptr; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        last_error = std::strerror(errno);
        ::close(fd);
        continue;
      }
      char magic[sizeof(kMagic)];
      uint32_t size = 0;
      std::vector<uint8_t> blob;
      bool ok = io_all(fd, const_cast<char*>(kMagic), sizeof(kMagic), true, deadline) &&
                io_all(fd, magic, sizeof(magic), false, deadline) &&
                std::memcmp(magic, kMagic, sizeof(kMagic)) == 0 &&
                io_all(fd, &size, sizeof(size), false, deadline);
      if (ok) {
        size = ntohl(size);
        ok = size <= kMaxBlob;
        if (ok) {
          blob.resize(size);
          ok = io_all(fd, blob.data(), size, false, deadline);
        }
      }
      ::close(fd);
      if (ok) return blob;
      last_error = "the server at " + addr.to_string() + " did not answer as sgl.cpp's bootstrap";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (Clock::now() < deadline);
  return internal_error("bootstrap: no NCCL id from --dist-init-addr " + addr.to_string() +
                        " within " + std::to_string(timeout.count()) + " ms (" + last_error + ")");
}

}  // namespace sgl::distributed
