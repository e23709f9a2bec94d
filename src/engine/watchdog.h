// Watchdog: SGLang's scheduler watchdog. A thread that checks, every half timeout, whether the
// engine loop still makes progress while it has work in flight; when a progress counter has not
// moved for the whole timeout it logs what was running and calls on_timeout (the engine's hard
// watchdog ends the process, so an orchestrator restarts a server whose GPU or collective
// hangs, instead of it answering /health forever). A soft watchdog only logs, again after each
// further timeout the stall lasts.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace sgl::engine {

struct WatchdogProgress {
  uint64_t counter = 0;  // moves whenever work is done
  bool active = false;   // work is in flight (an idle loop is never stuck)
};

struct WatchdogOptions {
  std::string name;  // in the log line: "<name> watchdog timeout ..."
  double timeout_s = 0;
  bool soft = false;
  std::function<WatchdogProgress()> progress;  // called from the watchdog's thread
  std::function<std::string()> dump_info;      // what was running; called from its thread
  std::function<void()> on_timeout;            // after the log; a soft watchdog calls it too
};

class Watchdog {
 public:
  explicit Watchdog(WatchdogOptions options);  // starts the thread; timeout_s > 0
  ~Watchdog();                                 // stops and joins it
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Times it has fired (for tests).
  int64_t timeouts() const;

 private:
  void run();

  WatchdogOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // under mutex_
  int64_t timeouts_ = 0;   // under mutex_
  std::thread thread_;
};

}  // namespace sgl::engine
