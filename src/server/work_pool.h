// WorkPool: a few threads with a known, large stack and a bounded queue, for the CPU work a
// request needs before it reaches the engine (chat-template rendering, tokenization), so that
// it never runs on the HTTP I/O threads.
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "core/status.h"

namespace sgl::server {

struct WorkPoolOptions {
  int threads = 2;
  size_t max_queued = 64;  // tasks waiting for a thread; more are refused (server busy)
  // Each thread's stack: the chat-template interpreter's stack guard assumes 8 MiB (see
  // tokenizer::RenderOptions::max_stack_bytes).
  size_t stack_bytes = size_t{8} << 20;
};

class WorkPool {
 public:
  // A task runs once on a pool thread; it should return soon after `cancelled` becomes true.
  using Task = std::function<void(const std::atomic<bool>& cancelled)>;

  static Result<std::unique_ptr<WorkPool>> start(const WorkPoolOptions& options);
  ~WorkPool();  // stop()
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  // Queues `task` with its cancel flag (which the caller may set at any time, e.g. when the
  // client goes away). False when the queue is full or the pool stopped: the task is dropped.
  bool submit(std::shared_ptr<std::atomic<bool>> cancelled, Task task);

  // Sets the cancel flag of every queued and running task, lets the threads run what is queued
  // (which sees its flag set and returns at once) and joins them. Idempotent.
  void stop();

  size_t queued() const;
  size_t pending() const;  // queued or running
  size_t stack_bytes() const { return options_.stack_bytes; }

 private:
  struct Item {
    std::shared_ptr<std::atomic<bool>> cancelled;
    Task task;
  };

  explicit WorkPool(const WorkPoolOptions& options) : options_(options) {}
  static void* thread_main(void* self);
  void run();

  const WorkPoolOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Item> queue_;
  std::vector<std::shared_ptr<std::atomic<bool>>> running_;  // flags of the tasks running now
  bool stopping_ = false;
  std::vector<pthread_t> threads_;
};

}  // namespace sgl::server
