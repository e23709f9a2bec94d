// Node 0 and the other nodes over TCP.
#include "runner/node_link.h"

#include <cstring>
#include <string>

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
// A frame longer than this is a bad frame, not an allocation to attempt.
constexpr uint64_t kMaxPayload = uint64_t{1} << 32;

enum Kind : uint32_t { kStart = 1, kBatch, kStop };

struct Hello {  // every byte set: it goes over the wire as it is
  char magic[8];
  uint32_t node_rank;
  uint32_t tp_size;
  uint32_t ep_size;
  uint32_t nnodes;
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
                            static_cast<int32_t>(hello.ep_size),
                            static_cast<int32_t>(hello.nnodes)};
    const auto rank = static_cast<int32_t>(hello.node_rank);
    std::string reason;
    if (!(theirs == layout_)) {
      reason = "node " + std::to_string(rank) + " runs with " + describe(theirs) +
               "; node 0 with " + describe(layout_);
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
  return Status::ok_status();
}

LeaderLink::~LeaderLink() { send_stop(); }

Status LeaderLink::send_all(uint32_t kind, const std::vector<uint8_t>& payload) {
  const FrameHeader header{kind, 0, payload.size()};
  for (size_t node = 1; node < followers_.size(); ++node) {
    const Socket& s = followers_[node];
    if (!s.valid()) continue;
    if (!write_all(s, &header, sizeof(header), no_deadline()) ||
        !write_all(s, payload.data(), payload.size(), no_deadline())) {
      return internal_error("node " + std::to_string(node) + " is gone (its link closed)");
    }
  }
  return Status::ok_status();
}

Status LeaderLink::send_start(const NodeStart& start) {
  std::vector<uint8_t> payload(sizeof(start));
  std::memcpy(payload.data(), &start, sizeof(start));
  return send_all(kStart, payload);
}

Status LeaderLink::send_batch(const ExecBatch& batch) {
  return send_all(kBatch, encode_exec_batch(batch));
}

void LeaderLink::send_stop() {
  if (stopped_) return;
  stopped_ = true;
  if (!send_all(kStop, {}).ok()) SGL_LOG_WARN << "a node was gone before the stop";
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
  char magic[sizeof(kMagic)];
  uint32_t status = 0, length = 0;
  if (!write_all(s, &hello, sizeof(hello), deadline) ||
      !read_all(s, magic, sizeof(magic), deadline) ||
      std::memcmp(magic, kMagic, sizeof(kMagic)) != 0 ||
      !read_all(s, &status, sizeof(status), deadline) ||
      !read_all(s, &length, sizeof(length), deadline) || length > 4096) {
    return internal_error("node " + std::to_string(node_rank) + ": node 0 at " + addr.to_string() +
                          " did not answer within " + std::to_string(timeout.count()) + " ms");
  }
  std::string reason(length, '\0');
  if (!read_all(s, reason.data(), length, deadline)) {
    return internal_error("node 0 at " + addr.to_string() + " closed the link");
  }
  if (status != 0) return invalid_argument("node 0 refused this node: " + reason);
  return std::unique_ptr<FollowerLink>(new FollowerLink(std::move(s)));
}

Status FollowerLink::receive(uint32_t* kind, std::vector<uint8_t>* payload) {
  FrameHeader header{};
  if (!read_all(socket_, &header, sizeof(header), no_deadline())) {
    return internal_error("node 0 closed the link");
  }
  if (header.length > kMaxPayload) {
    return invalid_argument("node link: a frame of " + std::to_string(header.length) + " bytes");
  }
  payload->resize(header.length);
  if (!read_all(socket_, payload->data(), payload->size(), no_deadline())) {
    return internal_error("node 0 closed the link within a frame");
  }
  *kind = header.kind;
  return Status::ok_status();
}

Result<NodeStart> FollowerLink::receive_start() {
  uint32_t kind = 0;
  std::vector<uint8_t> payload;
  SGL_RETURN_IF_ERROR(receive(&kind, &payload));
  if (kind == kStop) return internal_error("node 0 stopped before it started");
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
  SGL_RETURN_IF_ERROR(receive(&kind, &payload));
  if (kind == kStop) return std::optional<ExecBatch>();
  if (kind != kBatch) {
    return invalid_argument("node link: expected a batch, got a frame of kind " +
                            std::to_string(kind));
  }
  SGL_ASSIGN_OR_RETURN(ExecBatch batch, decode_exec_batch(payload));
  return std::optional<ExecBatch>(std::move(batch));
}

}  // namespace sgl::runner
