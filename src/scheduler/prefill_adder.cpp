// PrefillAdder budgets.
#include "scheduler/prefill_adder.h"

#include <algorithm>
#include <limits>

#include "scheduler/scheduler_options.h"

namespace sgl::scheduler {

PrefillAdder::PrefillAdder(std::function<int64_t()> available_and_evictable,
                           int64_t reserved_tokens, int64_t max_prefill_tokens,
                           int64_t chunk_tokens, int32_t free_running_slots, bool nothing_running)
    : available_and_evictable_(std::move(available_and_evictable)),
      total_offset_(reserved_tokens),
      rem_input_tokens_(max_prefill_tokens),
      rem_chunk_tokens_(chunk_tokens > 0 ? chunk_tokens : std::numeric_limits<int64_t>::max()),
      free_running_slots_(free_running_slots),
      nothing_running_(nothing_running) {}

AddResult PrefillAdder::budget_state() const {
  if (rem_total_tokens() <= 0) return AddResult::kNoToken;
  if (rem_input_tokens_ <= 0 || rem_chunk_tokens_ <= 0 || free_running_slots_ <= 0) {
    return AddResult::kOther;
  }
  return AddResult::kContinue;
}

void PrefillAdder::add_chunked_req(Req& req) {
  const int64_t extend = req.extend_input_len;
  if (extend > rem_chunk_tokens_) {
    req.extend_input_len = static_cast<int32_t>(rem_chunk_tokens_);
    req.fill_ids.resize(req.prefix_indices.size() + rem_chunk_tokens_);
    req.is_chunked = true;
    new_chunked_req_ = &req;
  } else {
    req.is_chunked = false;
  }
  total_offset_ += req.extend_input_len;
  rem_input_tokens_ -= req.extend_input_len;
  if (rem_chunk_tokens_ != std::numeric_limits<int64_t>::max()) {
    rem_chunk_tokens_ -= req.extend_input_len;
  }
  can_run_list_.push_back(&req);
  --free_running_slots_;
}

AddResult PrefillAdder::add_one_req(Req& req, const std::function<void(Req&)>& lock) {
  if (free_running_slots_ <= 0 || rem_chunk_tokens_ <= 0) return AddResult::kOther;
  const int64_t remaining_new = std::max<int64_t>(
      0, std::min<int64_t>(req.request.max_new_tokens - static_cast<int64_t>(req.output_ids.size()),
                           kClipMaxNewTokens));
  const int64_t extend = req.extend_input_len;
  const bool first_of_idle = nothing_running_ && can_run_list_.empty();
  if (extend + remaining_new > rem_total_tokens() &&
      !(first_of_idle && extend < rem_total_tokens())) {
    return AddResult::kNoToken;
  }
  if (extend > rem_input_tokens_ && !can_run_list_.empty()) return AddResult::kOther;

  lock(req);
  if (extend <= rem_chunk_tokens_) {
    total_offset_ += extend + remaining_new;
    rem_input_tokens_ -= extend;
    if (rem_chunk_tokens_ != std::numeric_limits<int64_t>::max()) rem_chunk_tokens_ -= extend;
    req.is_chunked = false;
  } else {
    // Only part of the input fits: take a chunk now; the rest follows in later rounds.
    const int64_t chunk = rem_chunk_tokens_;
    req.extend_input_len = static_cast<int32_t>(chunk);
    req.fill_ids.resize(req.prefix_indices.size() + chunk);
    req.is_chunked = true;
    new_chunked_req_ = &req;
    total_offset_ += chunk;
    rem_input_tokens_ -= chunk;
    rem_chunk_tokens_ -= chunk;
  }
  can_run_list_.push_back(&req);
  --free_running_slots_;
  return budget_state();
}

}  // namespace sgl::scheduler
