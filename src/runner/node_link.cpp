// Node 0 and the other nodes over TCP.
#include "runner/node_link.h"

#include <poll.h>

#include <cstring>
#include <string>

#include "core/check.h"
#include "core/logging.h"
#include "runner/exec_batch_wire.h"

namespace sgl::runner {
namespace {

using distributed::no_deadline;
using distributed::read_all;
using distributed::Socket;
using distributed::SocketClock;
using distributed::write_all;

constexpr char kMagic[8] = {'S', 'G', 'L', 'N', 'O', 'D', 'E', '1'};
// A frame longer than this is a bad frame, not an allocation to attempt (a batch's largest
// part, its grammar masks, is a few MB).
constexpr uint64_t kMaxPayload = uint64_t{256} << 20;
// How long node 0 gives a follower to take the Stop.
constexpr std::chrono::seconds kStopTimeout(5);
// How often a watch looks at its sockets.
constexpr int kWatchPollMs = 100;

enum Kind : uint32_t { kJoined = 1, kStart, kBatch, kStop };

struct Hello {  // every byte set: it goes over the wire as it is
  char magic[8];
  uint32_t node_rank;
  uint32_t tp_size;
  uint32_t ep_size;
  uint32_t nnodes;
  uint64_t options_fingerprint;
};

struct FrameHeader {
  uint32_t kind;
  uint32_t reserved;
  uint64_t length;
};

std::string describe(const NodeLayout& l) {
  return "--tp-size " + std::to_string(l.tp_size) + " --ep-size " + std::to_string(l.ep_size) +
         " --nnodes " + std::to_string(l.nnodes);
}

// Node 0's answer to a hello: accepted (empty reason) or refused.
bool answer(const Socket& s, const std::string& reason, SocketClock::time_point deadline) {
  const uint32_t status = reason.empty() ? 0 : 1;
  const auto length = static_cast<uint32_t>(reason.size());
  return write_all(s, kMagic, sizeof(kMagic), deadline) &&
         write_all(s, &status, sizeof(status), deadline) &&
         write_all(s, &length, sizeof(length), deadline) &&
         write_all(s, reason.data(), reason.size(), deadline);
}

// Whether one of `fds` hung up (its peer closed or reset), waiting up to kWatchPollMs; *which
// says which.
bool hung_up(std::vector<pollfd>& fds, size_t* which) {
  if (::poll(fds.data(), fds.size(), kWatchPollMs) <= 0) return false;
  for (size_t i = 0; i < fds.size(); ++i) {
    if ((fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
      *which = i;
      return true;
    }
  }
  return false;
}

}  // namespace

Result<std::unique_ptr<LeaderLink>> LeaderLink::listen(const distributed::DistInitAddr& addr,
                                                       const NodeLayout& layout) {
  if (layout.nnodes < 2) return invalid_argument("a node link needs --nnodes >= 2");
  std::unique_ptr<LeaderLink> link(new LeaderLink(layout));
  SGL_ASSIGN_OR_RETURN(link->listener_, distributed::listen_at(addr, &link->port_));
  link->followers_.resize(static_cast<size_t>(layout.nnodes));
  return link;
}

Result<std::unique_ptr<LeaderLink>> LeaderLink::accept_followers(
    const distributed::DistInitAddr& addr, const NodeLayout& layout,
    std::chrono::milliseconds timeout) {
  SGL_ASSIGN_OR_RETURN(std::unique_ptr<LeaderLink> link, listen(addr, layout));
  SGL_LOG_INFO << "waiting for " << layout.nnodes - 1 << " other node(s) at " << addr.to_string();
  SGL_RETURN_IF_ERROR(link->accept(timeout));
  return link;
}

Status LeaderLink::accept(std::chrono::milliseconds timeout) {
  const auto deadline = SocketClock::now() + timeout;
  for (int joined = 1; joined < layout_.nnodes;) {
    Socket peer = distributed::accept_before(listener_, deadline);
    if (!peer.valid()) {
      return internal_error(
          std::to_string(joined - 1) + " of " + std::to_string(layout_.nnodes - 1) +
          " other nodes joined node 0 within " + std::to_string(timeout.count()) + " ms");
    }
    // A peer that says nothing (not one of ours) is dropped after a while, not waited for.
    const auto hello_deadline = std::min(deadline, SocketClock::now() + std::chrono::seconds(5));
    Hello hello{};
    if (!read_all(peer, &hello, sizeof(hello), hello_deadline) ||
        std::memcmp(hello.magic, kMagic, sizeof(kMagic)) != 0) {
      continue;
    }
    const NodeLayout theirs{static_cast<int32_t>(hello.tp_size),
                            static_cast<int32_t>(hello.ep_size), static_cast<int32_t>(hello.nnodes),
                            hello.options_fingerprint};
    const auto rank = static_cast<int32_t>(hello.node_rank);
    std::string reason;
    if (theirs.tp_size != layout_.tp_size || theirs.ep_size != layout_.ep_size ||
        theirs.nnodes != layout_.nnodes) {
      reason = "node " + std::to_string(rank) + " runs with " + describe(theirs) +
               "; node 0 with " + describe(layout_);
    } else if (theirs.options_fingerprint != layout_.options_fingerprint) {
      reason = "node " + std::to_string(rank) +
               "'s engine flags (batch and token limits, dtypes, context length, CUDA graphs) "
               "differ from node 0's: start every node with the same flags";
    } else if (rank < 1 || rank >= layout_.nnodes) {
      reason = "--node-rank " + std::to_string(rank) + " is not in [1, --nnodes " +
               std::to_string(layout_.nnodes) + ")";
    } else if (followers_[static_cast<size_t>(rank)].valid()) {
      reason = "two nodes joined as --node-rank " + std::to_string(rank);
    }
    answer(peer, reason, hello_deadline);
    if (!reason.empty()) return invalid_argument(reason);
    followers_[static_cast<size_t>(rank)] = std::move(peer);
    SGL_LOG_INFO << "node " << rank << " joined";
    ++joined;
  }
  listener_ = Socket();
  // The followers wait for this before they join the ranks' group: when a node is refused
  // above, node 0 ends, and the nodes it had accepted learn it from their link at once.
  return send_all(kJoined, {}, deadline);
}

LeaderLink::~LeaderLink() {
  send_stop();
  if (watcher_.joinable()) watcher_.join();
}

Status LeaderLink::send_all(uint32_t kind, const std::vector<uint8_t>& payload,
                            SocketClock::time_point deadline) {
  const FrameHeader header{kind, 0, payload.size()};
  for (size_t node = 1; node < followers_.size(); ++node) {
    const Socket& s = followers_[node];
    if (!s.valid()) continue;
    if (!write_all(s, &header, sizeof(header), deadline) ||
        !write_all(s, payload.data(), payload.size(), deadline)) {
      return internal_error("node " + std::to_string(node) + " is gone (its link closed)");
    }
  }
  return Status::ok_status();
}

Status LeaderLink::send_start(const NodeStart& start) {
  std::vector<uint8_t> payload(sizeof(start));
  std::memcpy(payload.data(), &start, sizeof(start));
  return send_all(kStart, payload, no_deadline());
}

Status LeaderLink::send_batch(const ExecBatch& batch) {
  return send_all(kBatch, encode_exec_batch(batch), no_deadline());
}

void LeaderLink::send_stop() {
  // Set first, so that a follower leaving after the Stop is not reported lost.
  if (stopped_.exchange(true)) return;
  if (!send_all(kStop, {}, SocketClock::now() + kStopTimeout).ok()) {
    SGL_LOG_WARN << "a node was gone before the stop";
  }
}

void LeaderLink::watch(std::function<void(int node)> lost) {
  SGL_CHECK(!watcher_.joinable()) << "a link is watched once";
  watcher_ = std::thread([this, lost = std::move(lost)] {
    std::vector<pollfd> fds;
    std::vector<int> nodes;
    for (size_t node = 1; node < followers_.size(); ++node) {
      if (!followers_[node].valid()) continue;
      fds.push_back({followers_[node].fd(), POLLRDHUP, 0});
      nodes.push_back(static_cast<int>(node));
    }
    size_t which = 0;
    while (!stopped_) {
      if (hung_up(fds, &which)) {
        if (!stopped_) lost(nodes[which]);
        return;
      }
    }
  });
}

Result<std::unique_ptr<FollowerLink>> FollowerLink::join(const distributed::DistInitAddr& addr,
                                                         int32_t node_rank,
                                                         const NodeLayout& layout,
                                                         std::chrono::milliseconds timeout) {
  const auto deadline = SocketClock::now() + timeout;
  SGL_ASSIGN_OR_RETURN(Socket s, distributed::connect_to(addr, deadline));
  Hello hello{};
  std::memcpy(hello.magic, kMagic, sizeof(kMagic));
  hello.node_rank = static_cast<uint32_t>(node_rank);
  hello.tp_size = static_cast<uint32_t>(layout.tp_size);
  hello.ep_size = static_cast<uint32_t>(layout.ep_size);
  hello.nnodes = static_cast<uint32_t>(layout.nnodes);
  hello.options_fingerprint = layout.options_fingerprint;
  char magic[sizeof(kMagic)];
  if (!write_all(s, &hello, sizeof(hello), deadline) ||
      !read_all(s, magic, sizeof(magic), deadline)) {
    return internal_error("node " + std::to_string(node_rank) + ": node 0 at " + addr.to_string() +
                          " did not answer within " + std::to_string(timeout.count()) + " ms");
  }
  uint32_t status = 0, length = 0;
  if (std::memcmp(magic, kMagic, sizeof(kMagic)) != 0 ||
      !read_all(s, &status, sizeof(status), deadline) ||
      !read_all(s, &length, sizeof(length), deadline) || length > 4096) {
    return invalid_argument("node " + std::to_string(node_rank) + ": what answers at " +
                            addr.to_string() + " is not an sgl-server node 0");
  }
  std::string reason(length, '\0');
  if (!read_all(s, reason.data(), length, deadline)) {
    return internal_error("node 0 at " + addr.to_string() + " closed the link");
  }
  if (status != 0) return invalid_argument("node 0 refused this node: " + reason);
  std::unique_ptr<FollowerLink> link(new FollowerLink(std::move(s)));
  uint32_t kind = 0;
  std::vector<uint8_t> payload;
  const Status joined = link->receive(&kind, &payload, deadline);
  if (!joined.ok()) {
    return joined.with_context("node " + std::to_string(node_rank) +
                               ": waiting for every node to join node 0");
  }
  if (kind == kStop) {
    return internal_error("node " + std::to_string(node_rank) +
                          ": waiting for every node to join node 0: node 0 stopped");
  }
  if (kind != kJoined) {
    return invalid_argument("node link: expected every node's join, got a frame of kind " +
                            std::to_string(kind));
  }
  return link;
}

FollowerLink::~FollowerLink() {
  stopped_ = true;
  if (watcher_.joinable()) watcher_.join();
}

Status FollowerLink::receive(uint32_t* kind, std::vector<uint8_t>* payload,
                             SocketClock::time_point deadline) {
  FrameHeader header{};
  if (!read_all(socket_, &header, sizeof(header), deadline)) {
    return internal_error("node 0 closed the link");
  }
  if (header.length > kMaxPayload) {
    return invalid_argument("node link: a frame of " + std::to_string(header.length) +
                            " bytes (at most " + std::to_string(kMaxPayload) + ")");
  }
  payload->resize(header.length);
  if (!read_all(socket_, payload->data(), payload->size(), deadline)) {
    return internal_error("node 0 closed the link within a frame");
  }
  *kind = header.kind;
  return Status::ok_status();
}

void FollowerLink::watch(std::function<void()> lost, std::chrono::milliseconds grace) {
  SGL_CHECK(!watcher_.joinable()) << "a link is watched once";
  watcher_ = std::thread([this, lost = std::move(lost), grace] {
    std::vector<pollfd> fds = {{socket_.fd(), POLLRDHUP, 0}};
    size_t which = 0;
    while (!stopped_) {
      if (!hung_up(fds, &which)) continue;
      // A Stop and then the close is the normal end: give the reader time to take the Stop.
      const auto until = SocketClock::now() + grace;
      while (!stopped_ && SocketClock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(kWatchPollMs));
      }
      if (!stopped_) lost();
      return;
    }
  });
}

Result<NodeStart> FollowerLink::receive_start() {
  uint32_t kind = 0;
  std::vector<uint8_t> payload;
  SGL_RETURN_IF_ERROR(receive(&kind, &payload, no_deadline()));
  if (kind == kStop) {
    stopped_ = true;
    return internal_error("node 0 stopped before it started");
  }
  NodeStart start;
  if (kind != kStart || payload.size() != sizeof(start)) {
    return invalid_argument("node link: expected the start, got a frame of kind " +
                            std::to_string(kind) + " (" + std::to_string(payload.size()) +
                            " bytes)");
  }
  std::memcpy(&start, payload.data(), sizeof(start));
  if (start.num_kv_slots < 1 || start.req_to_token_rows < 1 || start.context_len < 1) {
    return invalid_argument("node link: a start without slots, rows or context");
  }
  return start;
}

Result<std::optional<ExecBatch>> FollowerLink::receive_batch() {
  uint32_t kind = 0;
  std::vector<uint8_t> payload;
  SGL_RETURN_IF_ERROR(receive(&kind, &payload, no_deadline()));
  if (kind == kStop) {
    stopped_ = true;
    return std::optional<ExecBatch>();
  }
  if (kind != kBatch) {
    return invalid_argument("node link: expected a batch, got a frame of kind " +
                            std::to_string(kind));
  }
  SGL_ASSIGN_OR_RETURN(ExecBatch batch, decode_exec_batch(payload));
  return std::optional<ExecBatch>(std::move(batch));
}

}  // namespace sgl::runner
