// RequestStream.
#include "engine/request_stream.h"

namespace sgl::engine {

void RequestStream::push(StreamEvent event) {
  {
    std::lock_guard lock(mutex_);
    if (finished_pushed_) return;
    finished_pushed_ = event.finished.has_value();
    events_.push_back(std::move(event));
  }
  cv_.notify_all();
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
