// NodeLink: serving across nodes (SGLang's --nnodes, --node-rank, --dist-init-addr). Node 0 runs
// the scheduler; every other node runs only its tensor-parallel ranks, which must run each batch
// node 0's ranks run, in the same order. Node 0 listens at --dist-init-addr, each other node
// connects and says who it is (LeaderLink / FollowerLink); once all have, node 0 sends, in order:
// Joined, one Start (what sizes the followers' tables), every batch (exec_batch_wire.h), Stop.
//
// Wire, one TCP connection per follower, the machine's byte order (one deployment's nodes share
// an architecture). The hello: a follower sends "SGLNODE1" and its Hello; node 0 answers
// "SGLNODE1", a u32 status (0: accepted) and a reason (u32 length, then the text; empty when
// accepted), so both nodes log why a node was refused. Then frames: kind (u32), a reserved u32,
// the payload's length (u64), the payload. Followers send nothing after their hello.
//
// A lost node: the batches' collectives would wait for it forever (NCCL has no timeout), so each
// end can watch its link for a hang-up (watch()) and is told at once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "distributed/bootstrap.h"
#include "distributed/tcp_socket.h"
#include "runner/batch_executor.h"

namespace sgl::runner {

// What every node's flags must agree on (checked at the hello): the ranks' layout and a
// fingerprint of the options that shape a forward pass (batch and token limits, dtypes, graphs).
struct NodeLayout {
  int32_t tp_size = 1;
  int32_t ep_size = 1;
  int32_t nnodes = 1;
  uint64_t options_fingerprint = 0;
};

// What node 0 tells the followers once its engine exists: their ranks' KV pools take its slot
// count (the scheduler's slot ids index every pool) and their token tables its shape.
struct NodeStart {
  int32_t num_kv_slots = 0;
  int32_t req_to_token_rows = 0;
  int32_t context_len = 0;
};

// Node 0's end: one connection per follower.
class LeaderLink {
 public:
  // Listens at `addr` and accepts layout.nnodes - 1 followers (each node rank once, each with
  // this layout) within `timeout`, then tells them all that every node joined. A follower that
  // does not fit is told why and the error names it.
  static Result<std::unique_ptr<LeaderLink>> accept_followers(const distributed::DistInitAddr& addr,
                                                              const NodeLayout& layout,
                                                              std::chrono::milliseconds timeout);
  // Tests: listen first (port 0: any; port() says which), then accept.
  static Result<std::unique_ptr<LeaderLink>> listen(const distributed::DistInitAddr& addr,
                                                    const NodeLayout& layout);
  Status accept(std::chrono::milliseconds timeout);
  uint16_t port() const { return port_; }

  ~LeaderLink();  // stops watching; sends Stop to every follower still linked

  // Errors name the follower that is gone.
  Status send_start(const NodeStart& start);
  Status send_batch(const ExecBatch& batch);
  void send_stop();
  // From now until Stop, `lost(node)` runs (on a thread of the link's) once a follower's link
  // hangs up.
  void watch(std::function<void(int node)> lost);

 private:
  explicit LeaderLink(const NodeLayout& layout) : layout_(layout) {}
  Status send_all(uint32_t kind, const std::vector<uint8_t>& payload,
                  distributed::SocketClock::time_point deadline);

  NodeLayout layout_;
  distributed::Socket listener_;
  uint16_t port_ = 0;
  std::vector<distributed::Socket> followers_;  // [nnodes]: by node rank ([0] unused)
  std::atomic<bool> stopped_{false};
  std::thread watcher_;
};

// A follower node's end.
class FollowerLink {
 public:
  // Connects to node 0 at `addr` (retrying until `timeout`: it may start later) as `node_rank`,
  // and waits (within `timeout`) until every node has joined.
  static Result<std::unique_ptr<FollowerLink>> join(const distributed::DistInitAddr& addr,
                                                    int32_t node_rank, const NodeLayout& layout,
                                                    std::chrono::milliseconds timeout);
  ~FollowerLink();  // stops watching

  // Node 0's Start (it comes once its model is loaded: no deadline).
  Result<NodeStart> receive_start();
  // The next batch, or nullopt at Stop. An error when node 0 is gone or a frame is bad.
  Result<std::optional<ExecBatch>> receive_batch();
  // From now until Stop is received, `lost()` runs (on a thread of the link's) when node 0's end
  // hangs up without a Stop read within `grace` (a Stop followed by the close is the normal end).
  void watch(std::function<void()> lost,
             std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

 private:
  explicit FollowerLink(distributed::Socket socket) : socket_(std::move(socket)) {}
  // The next frame's kind and payload, before `deadline`.
  Status receive(uint32_t* kind, std::vector<uint8_t>* payload,
                 distributed::SocketClock::time_point deadline);

  distributed::Socket socket_;
  std::atomic<bool> stopped_{false};  // Stop read, or destroying
  std::thread watcher_;
};

}  // namespace sgl::runner
