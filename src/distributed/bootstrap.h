// Multi-node bootstrap (SGLang's --dist-init-addr, --nnodes, --node-rank): the flags' checks and
// the exchange of an opaque id blob (a ncclUniqueId: nccl_communicator.h) over TCP. Rank 0 of
// node 0 makes the id and serves it (runner/tp_worker_group.h: at --dist-init-addr's port + 1);
// the other nodes fetch it there, then every rank joins the NCCL group it names. Plain POSIX
// sockets; no CUDA, so the exchange is tested on the CPU.
//
// Wire format, one exchange per connection: the client sends the 8 bytes "SGLBOOT1"; the server
// answers "SGLBOOT1", the blob's length (u32, big-endian) and the blob, then closes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/status.h"
#include "distributed/tcp_socket.h"

namespace sgl::distributed {

struct DistInitAddr {
  std::string host;  // a name or an address (IPv6 without its brackets)
  uint16_t port = 0;
  std::string to_string() const;
};

// "HOST:PORT" or "[IPV6]:PORT"; PORT in [1, 65535] (0 only with allow_port_zero, tests' "any").
Result<DistInitAddr> parse_dist_init_addr(std::string_view text, bool allow_port_zero = false);

// The node layout the flags give.
struct MultiNode {
  int nnodes = 1;                              // --nnodes
  int node_rank = 0;                           // --node-rank
  std::optional<DistInitAddr> dist_init_addr;  // --dist-init-addr
};

// nnodes >= 1, node_rank in [0, nnodes), --dist-init-addr required when nnodes > 1:
// InvalidArgument naming the flag otherwise.
Status check_multi_node(const MultiNode& layout);

// nnodes == 1, or Unimplemented saying that `tool` runs on one node (one line).
Status check_single_node(const MultiNode& layout, std::string_view tool);

// `tp_size` ranks split evenly over the nodes (each runs tp_size / nnodes), or InvalidArgument.
Status check_ranks_per_node(int tp_size, const MultiNode& layout);

// Serves one blob to `clients` connections on a thread of its own until each has it (or the
// server is destroyed).
class IdServer {
 public:
  // Binds addr (its host: the interface to listen on; port 0: an ephemeral port, see port()).
  static Result<std::unique_ptr<IdServer>> start(const DistInitAddr& addr,
                                                 std::vector<uint8_t> blob, int clients);
  ~IdServer();  // stops serving, joins the thread
  IdServer(const IdServer&) = delete;
  IdServer& operator=(const IdServer&) = delete;

  uint16_t port() const { return port_; }
  // Waits until `clients` clients got the blob: OK, or an error naming the timeout.
  Status wait(std::chrono::milliseconds timeout);

 private:
  IdServer() = default;
  void serve();

  Socket listener_;
  uint16_t port_ = 0;
  std::vector<uint8_t> blob_;
  int clients_ = 0;
  std::atomic<int> served_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Connects to addr (retrying until `timeout`: the server may start later) and reads the blob.
Result<std::vector<uint8_t>> fetch_id(const DistInitAddr& addr, std::chrono::milliseconds timeout);

}  // namespace sgl::distributed
