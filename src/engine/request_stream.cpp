// RequestStream.
#include "engine/request_stream.h"

namespace sgl::engine {

void RequestStream::push(StreamEvent event) {
  std::shared_ptr<const std::function<void()>> notify;
  {
    std::lock_guard lock(mutex_);
    if (finished_pushed_) return;
    finished_pushed_ = event.finished.has_value();
    events_.push_back(std::move(event));
    notify = notify_;
  }
  cv_.notify_all();
  if (notify) (*notify)();
}

void RequestStream::set_notify(std::function<void()> notify) {
  bool pending = false;
  {
    std::lock_guard lock(mutex_);
    notify_ = notify ? std::make_shared<const std::function<void()>>(std::move(notify)) : nullptr;
    pending = notify_ && !events_.empty();
    if (pending) notify = *notify_;
  }
  if (pending) notify();
}

std::optional<StreamEvent> RequestStream::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!cv_.wait_for(lock, timeout, [this] { return !events_.empty() || finished_taken_; })) {
    return std::nullopt;
  }
  if (events_.empty()) return std::nullopt;
  StreamEvent merged = std::move(events_.front());
  events_.pop_front();
  while (!events_.empty()) {
    StreamEvent& e = events_.front();
    merged.token_ids.insert(merged.token_ids.end(), e.token_ids.begin(), e.token_ids.end());
    merged.logprobs.insert(merged.logprobs.end(), e.logprobs.begin(), e.logprobs.end());
    merged.top_logprobs.insert(merged.top_logprobs.end(), e.top_logprobs.begin(),
                               e.top_logprobs.end());
    if (e.input_logprobs) merged.input_logprobs = std::move(e.input_logprobs);
    if (e.finished) merged.finished = e.finished;
    merged.usage = e.usage;
    events_.pop_front();
  }
  if (merged.finished) finished_taken_ = true;
  return merged;
}

bool RequestStream::done() const {
  std::lock_guard lock(mutex_);
  return finished_taken_;
}

}  // namespace sgl::engine
