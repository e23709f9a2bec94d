// TCP plumbing the multi-node pieces share (bootstrap.h's id exchange, socket_communicator.h's
// collectives): an owned socket, resolving --dist-init-addr, listening and connecting, and
// exact reads and writes with a deadline. Plain POSIX sockets, non-blocking (every wait is a
// poll bounded by its deadline).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace sgl::distributed {

struct DistInitAddr;

using SocketClock = std::chrono::steady_clock;

// An owned socket descriptor (closed on destruction; move-only).
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket();
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();

 private:
  int fd_ = -1;
};

// A socket listening at addr (its host: the interface; port 0: an ephemeral port, *port says
// which). InvalidArgument naming --dist-init-addr when it cannot.
Result<Socket> listen_at(const DistInitAddr& addr, uint16_t* port);
// A connection to addr, retried until `deadline` (the listener may start later). The error says
// why the last attempt failed.
Result<Socket> connect_to(const DistInitAddr& addr, SocketClock::time_point deadline);
// The next connection on `listener`, or an invalid socket once `deadline` passed.
Socket accept_before(const Socket& listener, SocketClock::time_point deadline);

// Reads or writes exactly n bytes before the deadline; false on a timeout, an error or a
// closed peer.
bool read_all(const Socket& s, void* data, size_t n, SocketClock::time_point deadline);
bool write_all(const Socket& s, const void* data, size_t n, SocketClock::time_point deadline);

// A deadline that never comes (collectives wait for their peers as long as they take).
inline SocketClock::time_point no_deadline() { return SocketClock::time_point::max(); }

}  // namespace sgl::distributed
