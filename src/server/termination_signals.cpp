// Termination signals.
#include "server/termination_signals.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <utility>

#include "core/logging.h"

namespace sgl::server {

sigset_t termination_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

void block_termination_signals() {
  const sigset_t set = termination_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

ExitOnTerminationSignal::ExitOnTerminationSignal(std::string during)
    : thread_([this, during = std::move(during)] {
        const sigset_t set = termination_signals();
        while (!done_.load()) {
          // NOTE: polled, so that the destructor ends the wait within 50 ms without a signal
          // of its own (which could race with a user's).
          timespec pause{0, 50'000'000};
          const int signal_number = sigtimedwait(&set, nullptr, &pause);
          if (signal_number > 0) {
            SGL_LOG_WARN << "sgl-server: signal " << signal_number << " while " << during
                         << ": exiting";
            // Nothing to drain yet; destructors would wait on the load or the other nodes.
            std::_Exit(0);
          }
        }
      }) {}

ExitOnTerminationSignal::~ExitOnTerminationSignal() {
  done_.store(true);
  thread_.join();
}

}  // namespace sgl::server
