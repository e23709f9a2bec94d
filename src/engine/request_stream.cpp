// RequestStream.
#include "engine/request_stream.h"

#include <iterator>

namespace sgl::engine {
namespace {

// Appends the later event `e` to `merged`: tokens (and their logprobs) concatenated, the prompt
// logprobs, the embedding and the finish taken when `e` has them, the latest usage; the first
// token's time kept, the last token's taken from `e` when it has tokens.
void merge_into(StreamEvent& merged, StreamEvent&& e) {
  if (!e.token_ids.empty()) {
    if (merged.token_ids.empty()) merged.first_token_time = e.first_token_time;
    merged.last_token_time = e.last_token_time;
  }
  merged.token_ids.insert(merged.token_ids.end(), e.token_ids.begin(), e.token_ids.end());
  merged.logprobs.insert(merged.logprobs.end(), e.logprobs.begin(), e.logprobs.end());
  merged.top_logprobs.insert(merged.top_logprobs.end(),
                             std::make_move_iterator(e.top_logprobs.begin()),
                             std::make_move_iterator(e.top_logprobs.end()));
  merged.token_ids_logprobs.insert(merged.token_ids_logprobs.end(),
                                   std::make_move_iterator(e.token_ids_logprobs.begin()),
                                   std::make_move_iterator(e.token_ids_logprobs.end()));
  merged.hidden_states.insert(merged.hidden_states.end(), e.hidden_states.begin(),
                              e.hidden_states.end());
  merged.routed_experts.insert(merged.routed_experts.end(), e.routed_experts.begin(),
                               e.routed_experts.end());
  if (e.spec.verify_ct > 0) merged.spec = std::move(e.spec);
  if (e.input_logprobs) merged.input_logprobs = std::move(e.input_logprobs);
  if (!e.embedding.empty()) merged.embedding = std::move(e.embedding);
  if (e.finished) merged.finished = std::move(e.finished);
  merged.usage = e.usage;
}

}  // namespace

void RequestStream::push(StreamEvent event) {
  std::shared_ptr<const std::function<void()>> notify;
  {
    std::lock_guard lock(mutex_);
    if (finished_pushed_) return;
    finished_pushed_ = event.finished.has_value();
    if (!event.token_ids.empty()) {
      event.first_token_time = event.last_token_time = std::chrono::steady_clock::now();
    }
    if (pending_) {
      merge_into(*pending_, std::move(event));
    } else {
      pending_ = std::move(event);
    }
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
    pending = notify_ && pending_.has_value();
    if (pending) notify = *notify_;
  }
  if (pending) notify();
}

std::optional<StreamEvent> RequestStream::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!cv_.wait_for(lock, timeout, [this] { return pending_.has_value() || finished_taken_; })) {
    return std::nullopt;
  }
  if (!pending_) return std::nullopt;
  std::optional<StreamEvent> merged = std::move(pending_);
  pending_.reset();
  if (merged->finished) finished_taken_ = true;
  return merged;
}

bool RequestStream::done() const {
  std::lock_guard lock(mutex_);
  return finished_taken_;
}

}  // namespace sgl::engine
