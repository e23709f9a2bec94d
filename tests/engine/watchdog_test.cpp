// The watchdog fires when the counter stalls while active, never while idle or progressing,
// and a soft watchdog fires again for each further timeout of one stall.
#include "engine/watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace sgl::engine {
namespace {

using namespace std::chrono_literals;

struct Loop {
  std::atomic<uint64_t> counter{0};
  std::atomic<bool> active{false};
  std::atomic<int> fired{0};

  WatchdogOptions options(double timeout_s, bool soft) {
    return {.name = "Test",
            .timeout_s = timeout_s,
            .soft = soft,
            .progress =
                [this] {
                  return WatchdogProgress{counter.load(), active.load()};
                },
            .dump_info = [] { return std::string("what ran"); },
            .on_timeout = [this] { ++fired; }};
  }
};

TEST(Watchdog, FiresOnceTheActiveCounterStallsForTheTimeout) {
  Loop loop;
  loop.active = true;
  const auto start = std::chrono::steady_clock::now();
  Watchdog watchdog(loop.options(0.1, false));
  while (loop.fired == 0) {
    ASSERT_LT(std::chrono::steady_clock::now() - start, 5s);
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
  EXPECT_EQ(watchdog.timeouts(), loop.fired.load());
}

TEST(Watchdog, NeverFiresWhileIdleOrProgressing) {
  Loop loop;
  Watchdog watchdog(loop.options(0.1, false));
  std::this_thread::sleep_for(400ms);  // idle, counter still
  loop.active = true;
  for (int i = 0; i < 40; ++i) {  // 400 ms of work, a batch every 10 ms
    ++loop.counter;
    std::this_thread::sleep_for(10ms);
  }
  loop.active = false;
  std::this_thread::sleep_for(300ms);  // idle again
  EXPECT_EQ(loop.fired, 0);
  EXPECT_EQ(watchdog.timeouts(), 0);
}

TEST(Watchdog, AStallCountsFromWhenWorkStarted) {
  Loop loop;
  Watchdog watchdog(loop.options(0.2, false));
  std::this_thread::sleep_for(500ms);  // idle long past the timeout
  loop.active = true;                  // then work starts, counter unchanged
  std::this_thread::sleep_for(100ms);  // within the timeout of the start
  EXPECT_EQ(loop.fired, 0);
}

TEST(Watchdog, SoftFiresAgainWhileTheStallLasts) {
  Loop loop;
  loop.active = true;
  Watchdog watchdog(loop.options(0.05, true));
  const auto start = std::chrono::steady_clock::now();
  while (loop.fired < 3) {
    ASSERT_LT(std::chrono::steady_clock::now() - start, 5s);
    std::this_thread::sleep_for(5ms);
  }
  // At least 2 * 50 ms between the first and the third.
  EXPECT_GE(std::chrono::steady_clock::now() - start, 150ms);
}

}  // namespace
}  // namespace sgl::engine
