// BackgroundResponses: replies driven to their end without a connection (polled when they wake,
// from any thread), cancelled on the driver, and aborted without callbacks at shutdown.
#include "server/background_responses.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace sgl::server {
namespace {

// A reply that ends once told to (from another thread, as an engine's output would).
struct FakeState {
  std::mutex mutex;
  std::function<void()> wake;
  bool ready = false;
  std::atomic<int> starts{0};
  std::atomic<bool> cancelled{false};
  std::atomic<bool> destroyed{false};

  void finish() {
    std::function<void()> w;
    {
      std::lock_guard lock(mutex);
      ready = true;
      w = wake;
    }
    w();
  }
};

class FakeReply final : public DeferredReply {
 public:
  explicit FakeReply(std::shared_ptr<FakeState> state) : state_(std::move(state)) {}
  ~FakeReply() override { state_->destroyed = true; }

  void start(std::function<void()> wake) override {
    ++state_->starts;
    std::lock_guard lock(state_->mutex);
    state_->wake = std::move(wake);
  }
  Progress poll() override {
    std::lock_guard lock(state_->mutex);
    if (!state_->ready) return {};
    Progress p;
    p.response.emplace();
    p.response->body = "done";
    p.done = true;
    return p;
  }
  void cancel() override { state_->cancelled = true; }

 private:
  std::shared_ptr<FakeState> state_;
};

// Waits until `state` has been started (its wake is set).
void wait_started(const FakeState& state) {
  while (state.starts.load() == 0) std::this_thread::yield();
}

TEST(BackgroundResponses, DrivesARepliesToTheirEndWhenTheyWake) {
  BackgroundResponses driver;
  auto state = std::make_shared<FakeState>();
  std::promise<std::string> body;
  std::atomic<int> started{0};
  BackgroundResponses::Callbacks callbacks;
  callbacks.started = [&] { ++started; };
  callbacks.done = [&](HttpResponse r) { body.set_value(r.body); };
  callbacks.cancelled = [] { FAIL() << "not cancelled"; };
  ASSERT_TRUE(driver.run("a", std::make_unique<FakeReply>(state), callbacks).ok());
  // One id runs once at a time.
  EXPECT_FALSE(
      driver.run("a", std::make_unique<FakeReply>(std::make_shared<FakeState>()), {}).ok());
  wait_started(*state);
  EXPECT_EQ(driver.running(), 1u);
  std::thread engine([&] { state->finish(); });
  EXPECT_EQ(body.get_future().get(), "done");
  engine.join();
  while (driver.running() != 0) std::this_thread::yield();
  EXPECT_TRUE(state->destroyed);
  EXPECT_EQ(started.load(), 1);
  EXPECT_EQ(state->starts.load(), 1);
  EXPECT_FALSE(state->cancelled);
  EXPECT_FALSE(driver.cancel("a"));  // it has ended
}

TEST(BackgroundResponses, CancelAbortsOnTheDriverAndWaitsForIt) {
  BackgroundResponses driver;
  auto state = std::make_shared<FakeState>();
  std::atomic<int> cancelled{0};
  BackgroundResponses::Callbacks callbacks;
  callbacks.done = [](HttpResponse) { FAIL() << "it never ends by itself"; };
  callbacks.cancelled = [&] { ++cancelled; };
  ASSERT_TRUE(driver.run("a", std::make_unique<FakeReply>(state), callbacks).ok());
  wait_started(*state);
  EXPECT_TRUE(driver.cancel("a"));
  // Cancelled and gone by the time cancel() returns.
  EXPECT_TRUE(state->cancelled);
  EXPECT_EQ(cancelled.load(), 1);
  EXPECT_EQ(driver.running(), 0u);
  EXPECT_FALSE(driver.cancel("a"));
  EXPECT_FALSE(driver.cancel("unknown"));
}

TEST(BackgroundResponses, ManyRepliesWokenFromManyThreads) {
  BackgroundResponses driver;
  constexpr int kReplies = 32;
  std::vector<std::shared_ptr<FakeState>> states;
  std::atomic<int> done{0};
  for (int i = 0; i < kReplies; ++i) {
    states.push_back(std::make_shared<FakeState>());
    BackgroundResponses::Callbacks callbacks;
    callbacks.done = [&](HttpResponse) { ++done; };
    ASSERT_TRUE(
        driver.run("r" + std::to_string(i), std::make_unique<FakeReply>(states[i]), callbacks)
            .ok());
  }
  std::vector<std::thread> engines;
  for (int i = 0; i < kReplies; ++i) {
    engines.emplace_back([&, i] {
      wait_started(*states[i]);
      if (i % 4 == 0) {
        EXPECT_TRUE(driver.cancel("r" + std::to_string(i)));
      } else {
        states[i]->finish();
      }
    });
  }
  for (std::thread& t : engines) t.join();
  while (driver.running() != 0) std::this_thread::yield();
  EXPECT_EQ(done.load(), kReplies - kReplies / 4);
  for (int i = 0; i < kReplies; ++i) EXPECT_EQ(states[i]->cancelled.load(), i % 4 == 0) << i;
}

TEST(BackgroundResponses, ShutdownAbortsWhatRunsWithoutCallbacks) {
  auto state = std::make_shared<FakeState>();
  {
    BackgroundResponses driver;
    BackgroundResponses::Callbacks callbacks;
    callbacks.done = [](HttpResponse) { FAIL(); };
    callbacks.cancelled = [] { FAIL(); };
    ASSERT_TRUE(driver.run("a", std::make_unique<FakeReply>(state), callbacks).ok());
    wait_started(*state);
  }
  EXPECT_TRUE(state->cancelled);
  EXPECT_TRUE(state->destroyed);
}

}  // namespace
}  // namespace sgl::server
