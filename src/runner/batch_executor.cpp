// In-order batch execution, inline or on a worker thread.
#include "runner/batch_executor.h"

#include <thread>

#include "core/check.h"

namespace sgl::runner {

ExecResult SyncExecutor::wait() {
  SGL_CHECK(!pending_.empty()) << "wait() with nothing submitted";
  ExecBatch batch = std::move(pending_.front());
  pending_.pop_front();
  return runner_.run(batch);
}

void ComputingBatchRunner::launch(const ExecBatch& batch) {
  ExecResult result = compute(batch);
  std::lock_guard lock(mutex_);
  done_.push_back(std::move(result));
}

ExecResult ComputingBatchRunner::finish() {
  std::lock_guard lock(mutex_);
  SGL_CHECK(!done_.empty()) << "finish() with nothing launched";
  ExecResult result = std::move(done_.front());
  done_.pop_front();
  return result;
}

AsyncExecutor::AsyncExecutor(BatchRunner& runner, std::chrono::microseconds spin)
    : runner_(runner), spin_(spin), worker_([this] { worker_loop(); }) {}

template <typename Ready>
void AsyncExecutor::spin_until(Ready ready) const {
  if (spin_.count() <= 0) return;
  const auto until = std::chrono::steady_clock::now() + spin_;
  while (!ready() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
}

AsyncExecutor::~AsyncExecutor() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void AsyncExecutor::submit(ExecBatch batch) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(batch));
    ++queued_;
    ++in_flight_;
  }
  cv_.notify_all();
}

ExecResult AsyncExecutor::wait() {
  spin_until([this] { return launched_.load(std::memory_order_acquire) > 0; });
  {
    std::unique_lock lock(mutex_);
    SGL_CHECK(in_flight_ > 0) << "wait() with nothing submitted";
    cv_.wait(lock, [this] { return launched_ > 0; });
    --launched_;
  }
  ExecResult result = runner_.finish();
  std::lock_guard lock(mutex_);
  --in_flight_;
  return result;
}

int64_t AsyncExecutor::in_flight() const {
  std::lock_guard lock(mutex_);
  return in_flight_;
}

void AsyncExecutor::worker_loop() {
  for (;;) {
    ExecBatch batch;
    spin_until([this] { return queued_.load(std::memory_order_acquire) > 0; });
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ with nothing left
      batch = std::move(queue_.front());
      queue_.pop_front();
      --queued_;
    }
    runner_.launch(batch);
    {
      std::lock_guard lock(mutex_);
      ++launched_;
    }
    cv_.notify_all();
  }
}

}  // namespace sgl::runner
