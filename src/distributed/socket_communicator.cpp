// Collectives between processes over TCP, through rank 0.
#include "distributed/socket_communicator.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/check.h"
#include "core/half.h"

namespace sgl::distributed {
namespace {

constexpr char kMagic[8] = {'S', 'G', 'L', 'C', 'O', 'M', 'M', '1'};

enum Op : uint32_t {
  kAllReduceSum = 1,
  kAllReduceMax,
  kAllGather,
  kAllToAll,
  kBroadcast,
  kBarrier,
};

const char* op_name(uint32_t op) {
  switch (op) {
    case kAllReduceSum:
    case kAllReduceMax:
      return "all_reduce";
    case kAllGather:
      return "all_gather";
    case kAllToAll:
      return "all_to_all";
    case kBroadcast:
      return "broadcast";
    case kBarrier:
      return "barrier";
    default:
      return "an unknown collective";
  }
}

void check_host(const Tensor& t, const char* op) {
  SGL_CHECK(t.device().is_cpu() && t.is_contiguous())
      << op << ": the socket communicator takes contiguous host tensors";
}

struct Hello {
  char magic[8];
  uint32_t rank;
  uint32_t size;
};

}  // namespace

Result<std::unique_ptr<SocketCommunicator>> SocketCommunicator::listen(const DistInitAddr& addr,
                                                                       int size) {
  if (size < 1) return invalid_argument("a group of " + std::to_string(size) + " ranks");
  std::unique_ptr<SocketCommunicator> c(new SocketCommunicator(0, size));
  SGL_ASSIGN_OR_RETURN(c->listener_, listen_at(addr, &c->port_));
  c->peers_.resize(static_cast<size_t>(size));
  return c;
}

Status SocketCommunicator::join_listening(std::chrono::milliseconds timeout) {
  SGL_CHECK(rank_ == 0 && listener_.valid()) << "join_listening: rank 0 after listen()";
  const auto deadline = SocketClock::now() + timeout;
  for (int joined = 1; joined < size_;) {
    Socket peer = accept_before(listener_, deadline);
    if (!peer.valid()) {
      return internal_error("socket communicator: " + std::to_string(joined - 1) + " of " +
                            std::to_string(size_ - 1) + " ranks joined rank 0 within " +
                            std::to_string(timeout.count()) + " ms");
    }
    // A peer that says nothing (not one of ours) is dropped after a while, not waited for.
    const auto hello_deadline = std::min(deadline, SocketClock::now() + std::chrono::seconds(5));
    Hello hello{};
    if (!read_all(peer, &hello, sizeof(hello), hello_deadline) ||
        std::memcmp(hello.magic, kMagic, sizeof(kMagic)) != 0) {
      continue;  // not one of ours: dropped
    }
    if (static_cast<int>(hello.size) != size_) {
      return invalid_argument("socket communicator: rank " + std::to_string(hello.rank) +
                              " joined a group of " + std::to_string(hello.size) +
                              " ranks; rank 0's has " + std::to_string(size_));
    }
    const auto r = static_cast<int>(hello.rank);
    if (r < 1 || r >= size_ || peers_[static_cast<size_t>(r)].valid()) {
      return invalid_argument("socket communicator: rank " + std::to_string(r) +
                              " joined twice or is not in [1, " + std::to_string(size_) + ")");
    }
    peers_[static_cast<size_t>(r)] = std::move(peer);
    ++joined;
  }
  for (int r = 1; r < size_; ++r) {
    if (!write_all(peers_[static_cast<size_t>(r)], kMagic, sizeof(kMagic), deadline)) {
      return internal_error("socket communicator: rank " + std::to_string(r) +
                            " left before the group formed");
    }
  }
  listener_ = Socket();
  return Status::ok_status();
}

Result<std::unique_ptr<SocketCommunicator>> SocketCommunicator::join(
    const DistInitAddr& addr, int rank, int size, std::chrono::milliseconds timeout) {
  if (size < 1 || rank < 0 || rank >= size) {
    return invalid_argument("socket communicator: rank " + std::to_string(rank) + " of " +
                            std::to_string(size));
  }
  if (rank == 0) {
    SGL_ASSIGN_OR_RETURN(std::unique_ptr<SocketCommunicator> c, listen(addr, size));
    SGL_RETURN_IF_ERROR(c->join_listening(timeout));
    return c;
  }
  const auto deadline = SocketClock::now() + timeout;
  SGL_ASSIGN_OR_RETURN(Socket s, connect_to(addr, deadline));
  Hello hello{};
  std::memcpy(hello.magic, kMagic, sizeof(kMagic));
  hello.rank = static_cast<uint32_t>(rank);
  hello.size = static_cast<uint32_t>(size);
  char ack[sizeof(kMagic)];
  if (!write_all(s, &hello, sizeof(hello), deadline) || !read_all(s, ack, sizeof(ack), deadline) ||
      std::memcmp(ack, kMagic, sizeof(kMagic)) != 0) {
    return internal_error("socket communicator: rank " + std::to_string(rank) + ": the group at " +
                          addr.to_string() + " did not form within " +
                          std::to_string(timeout.count()) + " ms");
  }
  std::unique_ptr<SocketCommunicator> c(new SocketCommunicator(rank, size));
  c->peers_.push_back(std::move(s));
  return c;
}

void SocketCommunicator::send(int peer, const void* data, size_t bytes) {
  const Socket& s = peers_[rank_ == 0 ? static_cast<size_t>(peer) : 0];
  SGL_CHECK(write_all(s, data, bytes, no_deadline()))
      << "socket communicator: rank " << rank_ << " lost its connection to rank " << peer;
}

void SocketCommunicator::receive(int peer, void* data, size_t bytes) {
  const Socket& s = peers_[rank_ == 0 ? static_cast<size_t>(peer) : 0];
  SGL_CHECK(read_all(s, data, bytes, no_deadline()))
      << "socket communicator: rank " << rank_ << " lost its connection to rank " << peer;
}

void SocketCommunicator::gather_at_root(const Header& mine, const void* data, size_t bytes,
                                        std::vector<std::vector<char>>* payloads, int only_from) {
  const auto sends = [&](int r) { return only_from < 0 || only_from == r; };
  if (rank_ != 0) {
    send(0, &mine, sizeof(mine));
    if (sends(rank_) && bytes > 0) send(0, data, bytes);
    return;
  }
  payloads->assign(static_cast<size_t>(size_), {});
  for (int r = 1; r < size_; ++r) {
    Header theirs;
    receive(r, &theirs, sizeof(theirs));
    SGL_CHECK(theirs.op == mine.op && theirs.dtype == mine.dtype && theirs.numel == mine.numel &&
              theirs.root == mine.root)
        << "collective mismatch: rank " << r << " called " << op_name(theirs.op) << " with "
        << theirs.numel << " elements, rank 0 " << op_name(mine.op) << " with " << mine.numel;
    if (sends(r) && bytes > 0) {
      (*payloads)[static_cast<size_t>(r)].resize(bytes);
      receive(r, (*payloads)[static_cast<size_t>(r)].data(), bytes);
    }
  }
}

void SocketCommunicator::all_reduce(const Tensor& buffer, ReduceOp op, backend::Stream) {
  check_host(buffer, "all_reduce");
  SGL_CHECK(buffer.dtype() == DType::kF32 || buffer.dtype() == DType::kBF16)
      << "all_reduce: f32 or bf16, got " << dtype_name(buffer.dtype());
  const int64_t n = buffer.numel();
  const Header mine{static_cast<uint64_t>(n), op == ReduceOp::kSum ? kAllReduceSum : kAllReduceMax,
                    static_cast<uint32_t>(buffer.dtype()), 0, 0};
  std::vector<std::vector<char>> payloads;
  gather_at_root(mine, buffer.raw(), buffer.nbytes(), &payloads);
  if (rank_ == 0) {
    // In rank order, as SharedMemoryGroup adds: the same bits.
    std::vector<float> acc(static_cast<size_t>(n)), row(static_cast<size_t>(n));
    for (int r = 0; r < size_; ++r) {
      const void* in = r == 0 ? buffer.raw() : payloads[static_cast<size_t>(r)].data();
      const float* x = static_cast<const float*>(in);
      if (buffer.dtype() == DType::kBF16) {
        const auto* h = static_cast<const uint16_t*>(in);
        for (int64_t i = 0; i < n; ++i) row[static_cast<size_t>(i)] = bf16_to_float(h[i]);
        x = row.data();
      }
      if (r == 0) {
        std::copy(x, x + n, acc.begin());
      } else {
        reduce_into(acc.data(), x, n, op);
      }
    }
    if (buffer.dtype() == DType::kF32) {
      std::copy(acc.begin(), acc.end(), buffer.data<float>());
    } else {
      auto* out = static_cast<uint16_t*>(buffer.raw());
      for (int64_t i = 0; i < n; ++i) out[i] = float_to_bf16(acc[static_cast<size_t>(i)]);
    }
    for (int r = 1; r < size_; ++r) send(r, buffer.raw(), buffer.nbytes());
  } else {
    receive(0, buffer.raw(), buffer.nbytes());
  }
}

void SocketCommunicator::all_gather(const Tensor& in, const Tensor& out, backend::Stream) {
  check_host(in, "all_gather");
  check_host(out, "all_gather");
  SGL_CHECK(out.dtype() == in.dtype() && out.numel() == in.numel() * size_)
      << "all_gather: out must hold size x in (" << in.numel() << " x " << size_ << "), got "
      << out.numel();
  const Header mine{static_cast<uint64_t>(in.numel()), kAllGather,
                    static_cast<uint32_t>(in.dtype()), 0, 0};
  std::vector<std::vector<char>> payloads;
  gather_at_root(mine, in.raw(), in.nbytes(), &payloads);
  if (rank_ == 0) {
    auto* to = static_cast<char*>(out.raw());
    if (to != in.raw()) std::memcpy(to, in.raw(), in.nbytes());  // in place: kept
    for (int r = 1; r < size_; ++r) {
      std::memcpy(to + r * in.nbytes(), payloads[static_cast<size_t>(r)].data(), in.nbytes());
    }
    for (int r = 1; r < size_; ++r) send(r, out.raw(), out.nbytes());
  } else {
    receive(0, out.raw(), out.nbytes());
  }
}

void SocketCommunicator::all_to_all(const Tensor& in, const Tensor& out, backend::Stream) {
  check_host(in, "all_to_all");
  check_host(out, "all_to_all");
  SGL_CHECK(out.dtype() == in.dtype() && out.numel() == in.numel() && in.numel() % size_ == 0)
      << "all_to_all: in and out of one size, a multiple of the ranks; got " << in.numel()
      << " and " << out.numel();
  const Header mine{static_cast<uint64_t>(in.numel()), kAllToAll, static_cast<uint32_t>(in.dtype()),
                    0, 0};
  std::vector<std::vector<char>> payloads;
  gather_at_root(mine, in.raw(), in.nbytes(), &payloads);
  if (rank_ != 0) {
    receive(0, out.raw(), out.nbytes());
    return;
  }
  // Rank d receives chunk d of every rank's input, in rank order.
  const size_t chunk = in.nbytes() / static_cast<size_t>(size_);
  const auto input = [&](int r) {
    return r == 0 ? static_cast<const char*>(in.raw()) : payloads[static_cast<size_t>(r)].data();
  };
  std::vector<char> routed(in.nbytes());
  for (int d = size_ - 1; d >= 0; --d) {  // rank 0's own last: `out` may be read as `in` before
    char* to = d == 0 ? static_cast<char*>(out.raw()) : routed.data();
    for (int r = 0; r < size_; ++r) std::memcpy(to + r * chunk, input(r) + d * chunk, chunk);
    if (d > 0) send(d, routed.data(), routed.size());
  }
}

void SocketCommunicator::broadcast(const Tensor& buffer, int root, backend::Stream) {
  check_host(buffer, "broadcast");
  SGL_CHECK(root >= 0 && root < size_) << "broadcast: root " << root << " of " << size_;
  const Header mine{static_cast<uint64_t>(buffer.numel()), kBroadcast,
                    static_cast<uint32_t>(buffer.dtype()), static_cast<uint32_t>(root), 0};
  std::vector<std::vector<char>> payloads;
  gather_at_root(mine, buffer.raw(), buffer.nbytes(), &payloads, root);
  if (rank_ == 0) {
    if (root != 0) {
      std::memcpy(buffer.raw(), payloads[static_cast<size_t>(root)].data(), buffer.nbytes());
    }
    for (int r = 1; r < size_; ++r) {
      if (r != root) send(r, buffer.raw(), buffer.nbytes());
    }
  } else if (rank_ != root) {
    receive(0, buffer.raw(), buffer.nbytes());
  }
}

void SocketCommunicator::barrier() {
  std::vector<std::vector<char>> payloads;
  gather_at_root(Header{0, kBarrier, 0, 0, 0}, nullptr, 0, &payloads);
  char go = 1;
  if (rank_ == 0) {
    for (int r = 1; r < size_; ++r) send(r, &go, 1);
  } else {
    receive(0, &go, 1);
  }
}

}  // namespace sgl::distributed
