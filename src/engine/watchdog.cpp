// The watchdog's polling thread.
#include "engine/watchdog.h"

#include <cstdio>

#include "core/check.h"
#include "core/logging.h"

namespace sgl::engine {

Watchdog::Watchdog(WatchdogOptions options) : options_(std::move(options)) {
  SGL_CHECK(options_.timeout_s > 0);
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
}

int64_t Watchdog::timeouts() const {
  std::lock_guard lock(mutex_);
  return timeouts_;
}

void Watchdog::run() {
  using Clock = std::chrono::steady_clock;
  const auto timeout = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options_.timeout_s));
  const auto period = timeout / 2;
  // The counter as last seen moving, and since when; an inactive loop restarts the clock, so
  // a stall is counted from the moment work is in flight.
  uint64_t last_counter = 0;
  Clock::time_point last_moved = Clock::now();
  std::unique_lock lock(mutex_);
  for (;;) {
    if (stop_cv_.wait_for(lock, period, [this] { return stopping_; })) return;
    lock.unlock();
    const WatchdogProgress progress = options_.progress();
    const Clock::time_point now = Clock::now();
    bool fired = false;
    if (!progress.active || progress.counter != last_counter) {
      last_counter = progress.counter;
      last_moved = now;
    } else if (now - last_moved > timeout) {
      const std::string info = options_.dump_info ? options_.dump_info() : std::string();
      if (!info.empty()) SGL_LOG_ERROR << options_.name << " debug info: " << info;
      char text[96];
      std::snprintf(text, sizeof text, " watchdog timeout (watchdog_timeout=%g, soft=%s)",
                    options_.timeout_s, options_.soft ? "True" : "False");
      SGL_LOG_ERROR << options_.name << text;
      std::fflush(stderr);
      last_moved = now;  // a soft watchdog fires again once the stall lasts another timeout
      fired = true;
    }
    lock.lock();
    if (fired) {
      ++timeouts_;
      lock.unlock();
      if (options_.on_timeout) options_.on_timeout();
      lock.lock();
    }
  }
}

}  // namespace sgl::engine
