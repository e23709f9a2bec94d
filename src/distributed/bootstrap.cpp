// The bootstrap flags' checks and the id exchange over TCP.
#include "distributed/bootstrap.h"

#include <arpa/inet.h>

#include <cctype>
#include <charconv>
#include <cstring>

#include "distributed/tcp_socket.h"

namespace sgl::distributed {
namespace {

constexpr char kMagic[8] = {'S', 'G', 'L', 'B', 'O', 'O', 'T', '1'};
constexpr uint32_t kMaxBlob = 1 << 16;

using Clock = SocketClock;

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

Status check_single_node(const MultiNode& layout, std::string_view tool) {
  if (layout.nnodes == 1) return Status::ok_status();
  return unimplemented("--nnodes " + std::to_string(layout.nnodes) + ": " + std::string(tool) +
                       " runs on one node; sgl-server serves across nodes");
}

Status check_ranks_per_node(int tp_size, const MultiNode& layout) {
  if (layout.nnodes >= 1 && tp_size % layout.nnodes == 0) return Status::ok_status();
  return invalid_argument("--tp-size " + std::to_string(tp_size) +
                          " does not split evenly over --nnodes " + std::to_string(layout.nnodes) +
                          " (each node runs --tp-size / --nnodes ranks)");
}

Result<std::unique_ptr<IdServer>> IdServer::start(const DistInitAddr& addr,
                                                  std::vector<uint8_t> blob, int clients) {
  if (blob.size() > kMaxBlob) return invalid_argument("bootstrap blob too large");
  std::unique_ptr<IdServer> server(new IdServer());
  SGL_ASSIGN_OR_RETURN(server->listener_, listen_at(addr, &server->port_));
  server->blob_ = std::move(blob);
  server->clients_ = clients;
  server->thread_ = std::thread([s = server.get()] { s->serve(); });
  return server;
}

IdServer::~IdServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void IdServer::serve() {
  std::vector<uint8_t> reply(kMagic, kMagic + sizeof(kMagic));
  const uint32_t size = htonl(static_cast<uint32_t>(blob_.size()));
  const auto* size_bytes = reinterpret_cast<const uint8_t*>(&size);
  reply.insert(reply.end(), size_bytes, size_bytes + sizeof(size));
  reply.insert(reply.end(), blob_.begin(), blob_.end());
  while (!stop_ && served_ < clients_) {
    const Socket peer = accept_before(listener_, Clock::now() + std::chrono::milliseconds(50));
    if (!peer.valid()) continue;
    // A peer that is not ours (or too slow) is dropped and not counted.
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    char hello[sizeof(kMagic)];
    if (read_all(peer, hello, sizeof(hello), deadline) &&
        std::memcmp(hello, kMagic, sizeof(kMagic)) == 0 &&
        write_all(peer, reply.data(), reply.size(), deadline)) {
      ++served_;
    }
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
  const auto deadline = Clock::now() + timeout;
  std::string last_error = "timed out";
  do {
    Result<Socket> connected = connect_to(addr, deadline);
    if (!connected.ok()) {
      last_error = connected.status().message();
      break;
    }
    const Socket s = std::move(connected).value();
    char magic[sizeof(kMagic)];
    uint32_t size = 0;
    std::vector<uint8_t> blob;
    bool ok = write_all(s, kMagic, sizeof(kMagic), deadline) &&
              read_all(s, magic, sizeof(magic), deadline) &&
              std::memcmp(magic, kMagic, sizeof(kMagic)) == 0 &&
              read_all(s, &size, sizeof(size), deadline);
    if (ok) {
      size = ntohl(size);
      ok = size <= kMaxBlob;
      if (ok) {
        blob.resize(size);
        ok = read_all(s, blob.data(), size, deadline);
      }
    }
    if (ok) return blob;
    last_error = "the server at " + addr.to_string() + " did not answer as sgl.cpp's bootstrap";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (Clock::now() < deadline);
  return internal_error("bootstrap: no NCCL id from --dist-init-addr " + addr.to_string() +
                        " within " + std::to_string(timeout.count()) + " ms (" + last_error + ")");
}

}  // namespace sgl::distributed
