// WorkPool: bounded queue, cancel flags at stop, prompt join, the stack size it promises.
#include "server/work_pool.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <chrono>
#include <future>
#include <thread>

namespace sgl::server {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<std::atomic<bool>> flag() { return std::make_shared<std::atomic<bool>>(false); }

// Blocks the pool's thread until released or cancelled.
struct Blocker {
  std::promise<void> started;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();

  WorkPool::Task task() {
    return [this](const std::atomic<bool>& cancelled) {
      started.set_value();
      while (!cancelled.load() && released.wait_for(1ms) != std::future_status::ready) {
      }
    };
  }
};

TEST(WorkPool, RefusesWhenTheQueueIsFull) {
  WorkPoolOptions options;
  options.threads = 1;
  options.max_queued = 2;
  auto pool = WorkPool::start(options);
  ASSERT_TRUE(pool.ok()) << pool.status().message();
  Blocker blocker;
  ASSERT_TRUE((*pool)->submit(flag(), blocker.task()));
  blocker.started.get_future().wait();  // the thread is busy; the queue is empty
  std::atomic<int> ran{0};
  auto count = [&ran](const std::atomic<bool>&) { ++ran; };
  EXPECT_TRUE((*pool)->submit(flag(), count));
  EXPECT_TRUE((*pool)->submit(flag(), count));
  EXPECT_FALSE((*pool)->submit(flag(), count));  // full: refused at once
  EXPECT_EQ((*pool)->queued(), 2u);
  blocker.release.set_value();
  (*pool)->stop();
  EXPECT_EQ(ran, 2);  // queued tasks still run (seeing their flag) so their replies complete
  EXPECT_FALSE((*pool)->submit(flag(), count));  // stopped
}

TEST(WorkPool, StopSetsEveryCancelFlagAndJoinsPromptly) {
  WorkPoolOptions options;
  options.threads = 2;
  auto pool = WorkPool::start(options);
  ASSERT_TRUE(pool.ok());
  Blocker a, b;
  auto fa = flag(), fb = flag(), fq = flag();
  ASSERT_TRUE((*pool)->submit(fa, a.task()));
  ASSERT_TRUE((*pool)->submit(fb, b.task()));
  a.started.get_future().wait();
  b.started.get_future().wait();
  bool saw_flag = false;
  ASSERT_TRUE((*pool)->submit(fq, [&saw_flag](const std::atomic<bool>& c) { saw_flag = c; }));
  const auto t0 = std::chrono::steady_clock::now();
  (*pool)->stop();  // the blockers only end when cancelled
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_TRUE(fa->load());
  EXPECT_TRUE(fb->load());
  EXPECT_TRUE(fq->load());
  EXPECT_TRUE(saw_flag);
  (*pool)->stop();  // idempotent
}

TEST(WorkPool, ThreadsHaveTheRequestedStack) {
  WorkPoolOptions options;
  options.threads = 1;
  options.stack_bytes = size_t{8} << 20;
  auto pool = WorkPool::start(options);
  ASSERT_TRUE(pool.ok());
  std::promise<size_t> size;
  ASSERT_TRUE((*pool)->submit(flag(), [&size](const std::atomic<bool>&) {
    pthread_attr_t attr;
    size_t bytes = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      pthread_attr_getstacksize(&attr, &bytes);
      pthread_attr_destroy(&attr);
    }
    size.set_value(bytes);
  }));
  EXPECT_GE(size.get_future().get(), size_t{8} << 20);
}

TEST(WorkPool, ATaskThatThrowsDoesNotKillItsThread) {
  WorkPoolOptions options;
  options.threads = 1;
  auto pool = WorkPool::start(options);
  ASSERT_TRUE(pool.ok());
  ASSERT_TRUE(
      (*pool)->submit(flag(), [](const std::atomic<bool>&) { throw std::runtime_error("x"); }));
  std::promise<void> ran;
  ASSERT_TRUE((*pool)->submit(flag(), [&ran](const std::atomic<bool>&) { ran.set_value(); }));
  EXPECT_EQ(ran.get_future().wait_for(10s), std::future_status::ready);
}

}  // namespace
}  // namespace sgl::server
