// WorkPool.
#include "server/work_pool.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/logging.h"

namespace sgl::server {

Result<std::unique_ptr<WorkPool>> WorkPool::start(const WorkPoolOptions& options) {
  if (options.threads < 1) return invalid_argument("the work pool needs at least one thread");
  std::unique_ptr<WorkPool> pool(new WorkPool(options));
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  int rc = pthread_attr_setstacksize(&attr, options.stack_bytes);
  for (int i = 0; rc == 0 && i < options.threads; ++i) {
    pthread_t thread;
    rc = pthread_create(&thread, &attr, &WorkPool::thread_main, pool.get());
    if (rc == 0) pool->threads_.push_back(thread);
  }
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    pool->stop();
    return internal_error(std::string("cannot start the work pool: ") + std::strerror(rc));
  }
  return pool;
}

WorkPool::~WorkPool() { stop(); }

void* WorkPool::thread_main(void* self) {
  static_cast<WorkPool*>(self)->run();
  return nullptr;
}

bool WorkPool::submit(std::shared_ptr<std::atomic<bool>> cancelled, Task task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || queue_.size() >= options_.max_queued) return false;
    queue_.push_back({std::move(cancelled), std::move(task)});
  }
  ready_.notify_one();
  return true;
}

void WorkPool::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left
    Item item = std::move(queue_.front());
    queue_.pop_front();
    running_.push_back(item.cancelled);
    lock.unlock();
    try {
      item.task(*item.cancelled);
    } catch (const std::exception& e) {  // NOTE: tasks do not throw; a thread must not die
      SGL_LOG_ERROR << "work pool task threw: " << e.what();
    } catch (...) {
      SGL_LOG_ERROR << "work pool task threw";
    }
    item.task = nullptr;  // what the task holds goes before the lock is taken again
    lock.lock();
    running_.erase(std::find(running_.begin(), running_.end(), item.cancelled));
  }
}

void WorkPool::stop() {
  std::vector<pthread_t> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    for (Item& item : queue_) item.cancelled->store(true);
    for (auto& flag : running_) flag->store(true);
    threads.swap(threads_);
  }
  ready_.notify_all();
  for (pthread_t thread : threads) pthread_join(thread, nullptr);
}

size_t WorkPool::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

size_t WorkPool::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size() + running_.size();
}

}  // namespace sgl::server
