// PrefillAdder budgets.
#include "scheduler/prefill_adder.h"

#include <algorithm>
#include <limits>

#include "core/check.h"
#include "scheduler/scheduler_options.h"

namespace sgl::scheduler {
namespace {

// The tokens `req` may still generate, clipped as SGLang's reservation is.
int64_t remaining_new_tokens(const Req& req) {
  return std::max<int64_t>(
      0, std::min<int64_t>(req.request.max_new_tokens - static_cast<int64_t>(req.output_ids.size()),
                           kClipMaxNewTokens));
}

}  // namespace

PrefillAdder::PrefillAdder(std::function<int64_t()> available_and_evictable,
                           int64_t reserved_tokens, int64_t max_prefill_tokens,
                           int64_t chunk_tokens, int32_t free_running_slots, bool nothing_running,
                           int64_t scoring_tokens, int64_t forward_input_tokens)
    : available_and_evictable_(std::move(available_and_evictable)),
      total_offset_(reserved_tokens),
      rem_input_tokens_(max_prefill_tokens),
      rem_chunk_tokens_(chunk_tokens > 0 ? chunk_tokens : std::numeric_limits<int64_t>::max()),
      forward_input_tokens_(forward_input_tokens),
      free_running_slots_(free_running_slots),
      nothing_running_(nothing_running),
      rem_scoring_tokens_(scoring_tokens) {
  SGL_CHECK(scoring_tokens >= 1) << "PrefillAdder: scoring budget must be at least one token";
  SGL_CHECK(forward_input_tokens >= 1) << "PrefillAdder: a forward takes at least one token";
}

AddResult PrefillAdder::budget_state() const {
  if (rem_total_tokens() <= 0) return AddResult::kNoToken;
  if (rem_input_tokens_ <= 0 || rem_chunk_tokens_ <= 0 || free_running_slots_ <= 0 ||
      (scoring_ && rem_scoring_tokens_ <= 0)) {
    return AddResult::kOther;
  }
  return AddResult::kContinue;
}

int64_t PrefillAdder::room_for(const Req& req) const {
  const int64_t chunk = std::min(rem_chunk_tokens_, forward_input_tokens_);
  if (scoring_ || req.wants_input_logprobs()) return std::min(chunk, rem_scoring_tokens_);
  return chunk;
}

void PrefillAdder::take(Req& req, int64_t tokens) {
  if (tokens < req.extend_input_len) {
    req.extend_input_len = static_cast<int32_t>(tokens);
    req.fill_ids.resize(req.prefix_indices.size() + tokens);
    req.is_chunked = true;
    new_chunked_req_ = &req;
  } else {
    req.is_chunked = false;
  }
  rem_input_tokens_ -= req.extend_input_len;
  if (rem_chunk_tokens_ != std::numeric_limits<int64_t>::max()) {
    rem_chunk_tokens_ -= req.extend_input_len;
  }
  rem_scoring_tokens_ -= req.extend_input_len;
  scoring_ = scoring_ || req.wants_input_logprobs();
  can_run_list_.push_back(&req);
  --free_running_slots_;
}

void PrefillAdder::add_chunked_req(Req& req) {
  take(req, room_for(req));
  // Its last chunk also reserves the tokens it will generate, as a request taken whole does
  // (it is not running yet, so the running reservation does not count them).
  total_offset_ += req.extend_input_len + (req.is_chunked ? 0 : remaining_new_tokens(req));
}

void PrefillAdder::release_running(int64_t reserved_tokens) {
  total_offset_ -= reserved_tokens;
  ++free_running_slots_;
}

int64_t PrefillAdder::tokens_needed(const Req& req) {
  return req.extend_input_len + remaining_new_tokens(req);
}

AddResult PrefillAdder::add_one_req(Req& req, const std::function<void(Req&)>& lock) {
  const int64_t room = room_for(req);  // <= 0: the chunk or a scoring batch is full
  if (free_running_slots_ <= 0 || room <= 0) return AddResult::kOther;
  const int64_t remaining_new = remaining_new_tokens(req);
  const int64_t extend = req.extend_input_len;
  const bool first_of_idle = nothing_running_ && can_run_list_.empty();
  if (extend + remaining_new > rem_total_tokens() &&
      !(first_of_idle && extend < rem_total_tokens())) {
    return AddResult::kNoToken;
  }
  if (extend > rem_input_tokens_ && !can_run_list_.empty()) return AddResult::kOther;

  lock(req);
  // A request taken whole also reserves its future tokens; the rest of a chunked one follows
  // in later rounds.
  take(req, room);
  total_offset_ += req.extend_input_len + (req.is_chunked ? 0 : remaining_new);
  return budget_state();
}

}  // namespace sgl::scheduler
