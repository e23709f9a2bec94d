// AsyncExecutor: batches run in submission order and every result comes back to wait(), whether
// the threads sleep at once or poll first (runner::AsyncExecutor's spin), with runners that
// finish at once and ones that take longer than the poll.
#include "runner/batch_executor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace sgl::runner {
namespace {

// Echoes each batch's id in its result after `delay`.
class DelayedRunner final : public ComputingBatchRunner {
 public:
  explicit DelayedRunner(std::chrono::microseconds delay) : delay_(delay) {}

 private:
  ExecResult compute(const ExecBatch& batch) override {
    std::this_thread::sleep_for(delay_);
    ExecResult result;
    result.batch_id = batch.id;
    return result;
  }
  std::chrono::microseconds delay_;
};

struct ExecutorCase {
  std::chrono::microseconds spin;
  std::chrono::microseconds delay;
};

class AsyncExecutorTest : public ::testing::TestWithParam<ExecutorCase> {};

TEST_P(AsyncExecutorTest, ReturnsEveryBatchInOrder) {
  DelayedRunner runner(GetParam().delay);
  AsyncExecutor executor(runner, GetParam().spin);
  int64_t next_id = 1, expected = 1;
  // One in flight (a verify's loop), then two (the overlap loop), then a burst of five.
  for (int64_t depth : {1, 2, 5}) {
    for (int round = 0; round < 20; ++round) {
      while (executor.in_flight() < depth) {
        ExecBatch batch;
        batch.id = next_id++;
        executor.submit(std::move(batch));
      }
      EXPECT_EQ(executor.wait().batch_id, expected++);
    }
    while (executor.in_flight() > 0) EXPECT_EQ(executor.wait().batch_id, expected++);
  }
  EXPECT_EQ(expected, next_id);
}

INSTANTIATE_TEST_SUITE_P(
    SpinAndDelay, AsyncExecutorTest,
    ::testing::Values(ExecutorCase{std::chrono::microseconds(0), std::chrono::microseconds(0)},
                      ExecutorCase{std::chrono::microseconds(0), std::chrono::microseconds(300)},
                      ExecutorCase{std::chrono::microseconds(200), std::chrono::microseconds(0)},
                      // Longer than the poll: each wait ends asleep on the condition variable.
                      ExecutorCase{std::chrono::microseconds(200),
                                   std::chrono::microseconds(1000)}));

}  // namespace
}  // namespace sgl::runner
