// SocketCommunicator: a communicator whose ranks are separate processes (or nodes) joined over
// TCP, for host tensors: the CPU side of serving across processes, and the CI proof of it.
// Rank 0 listens at an address (--dist-init-addr's form) and every other rank connects to it;
// each collective goes through rank 0, which combines in rank order exactly as
// SharedMemoryGroup does, so results are bit-identical to it (and to each other).
//
// Wire format: a connecting rank sends "SGLCOMM1", its rank and the group size (u32 each);
// rank 0 answers "SGLCOMM1" once every rank has joined. Then each collective is one message
// from every rank to rank 0 and one back: a header (element count u64, then op, dtype, root and
// a reserved 0, u32 each; the machine's byte order) and the payload.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "core/status.h"
#include "distributed/bootstrap.h"
#include "distributed/communicator.h"
#include "distributed/tcp_socket.h"

namespace sgl::distributed {

class SocketCommunicator final : public Communicator {
 public:
  // Joins the group of `size` ranks at `addr` as `rank` (rank 0 listens there; port 0: any, see
  // port()): returns once every rank has joined, or an error naming what did not happen within
  // `timeout`.
  static Result<std::unique_ptr<SocketCommunicator>> join(const DistInitAddr& addr, int rank,
                                                          int size,
                                                          std::chrono::milliseconds timeout);
  // Rank 0 only: starts listening at `addr` (its port may be 0), then join_listening() accepts.
  // Lets a caller learn the ephemeral port before the other ranks connect.
  static Result<std::unique_ptr<SocketCommunicator>> listen(const DistInitAddr& addr, int size);
  Status join_listening(std::chrono::milliseconds timeout);
  uint16_t port() const { return port_; }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void all_reduce(const Tensor& buffer, ReduceOp op, backend::Stream stream) override;
  void all_gather(const Tensor& in, const Tensor& out, backend::Stream stream) override;
  void all_to_all(const Tensor& in, const Tensor& out, backend::Stream stream) override;
  void broadcast(const Tensor& buffer, int root, backend::Stream stream) override;
  void barrier() override;

 private:
  SocketCommunicator(int rank, int size) : rank_(rank), size_(size) {}
  struct Header {  // every byte set: it goes over the wire as it is (native byte order)
    uint64_t numel = 0;
    uint32_t op = 0;
    uint32_t dtype = 0;
    uint32_t root = 0;
    uint32_t reserved = 0;
  };
  // Rank 0: every other rank's header, checked to agree with `mine`, and its payload of `bytes`
  // bytes into payloads[r] (from rank `only_from` alone when >= 0). Others: send theirs.
  void gather_at_root(const Header& mine, const void* data, size_t bytes,
                      std::vector<std::vector<char>>* payloads, int only_from = -1);
  void send(int peer, const void* data, size_t bytes);
  void receive(int peer, void* data, size_t bytes);

  int rank_;
  int size_;
  uint16_t port_ = 0;
  Socket listener_;            // rank 0, until every rank joined
  std::vector<Socket> peers_;  // rank 0: [size] (peers_[0] unused); others: [1], rank 0
};

}  // namespace sgl::distributed
