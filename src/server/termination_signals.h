// SIGINT and SIGTERM: blocked in every thread, so that serve() waits for them and drains; before
// the server listens (model load, the wait for other nodes) nothing needs draining, and
// ExitOnTerminationSignal ends the process at once instead of leaving the signal pending.
#pragma once

#include <signal.h>

#include <atomic>
#include <string>
#include <thread>

namespace sgl::server {

// The signals a server drains on.
sigset_t termination_signals();

// Blocks them in the calling thread and the threads it starts afterwards. Call first thing in
// main(), before any thread starts.
void block_termination_signals();

// While it lives, a thread waits for a (blocked) termination signal and, on one, logs it and
// exits the process with status 0: a model load can take minutes, a wait for other nodes may
// never end, and a signal that waited for them would not stop the server in time. Once it is
// gone, a signal stays pending for serve() to drain on.
class ExitOnTerminationSignal {
 public:
  explicit ExitOnTerminationSignal(std::string during);  // e.g. "loading the model"
  ~ExitOnTerminationSignal();
  ExitOnTerminationSignal(const ExitOnTerminationSignal&) = delete;
  ExitOnTerminationSignal& operator=(const ExitOnTerminationSignal&) = delete;

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace sgl::server
