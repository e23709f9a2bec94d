// PrefillAdder: admits waiting requests into one prefill batch under token budgets (SGLang's
// PrefillAdder): total KV left after reserving room for running requests' future tokens, new
// input tokens per batch, the chunked-prefill chunk, and the scoring budget: a batch in which a
// request wants its prompt's logprobs returns logits for every token, so its tokens are capped
// at what the model's logits buffer holds.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "scheduler/req.h"

namespace sgl::scheduler {

enum class AddResult {
  kContinue,  // admitted (maybe as a chunk); try the next request
  kNoToken,   // out of KV memory: stop admitting
  kOther,     // a per-batch budget is spent: stop admitting
};

class PrefillAdder {
 public:
  // `available_and_evictable` is read live: locking a prefix makes it unevictable, so the
  // budget must see that. `reserved_tokens` is what running requests may still generate
  // (already scaled by new_token_ratio). `chunk_tokens` <= 0 disables chunking.
  // With `nothing_running`, the first request is admitted whenever its input fits, even if its
  // future tokens may not: otherwise a request larger than the budget would wait forever
  // (retraction then keeps it going). `scoring_tokens` >= 1. `forward_input_tokens`: the most
  // input tokens one request may add to a forward; without chunking a prompt is checked against
  // it when submitted, but a retracted request resumes with its outputs too, so one longer than
  // this is still taken in chunks of it.
  PrefillAdder(std::function<int64_t()> available_and_evictable, int64_t reserved_tokens,
               int64_t max_prefill_tokens, int64_t chunk_tokens, int32_t free_running_slots,
               bool nothing_running, int64_t scoring_tokens, int64_t forward_input_tokens);

  // `req` has fill_ids / prefix_indices / extend_input_len set from a fresh prefix match; `lock`
  // locks its prefix (called only when admitted). A request whose input exceeds the chunk
  // budget (or, in a scoring batch, the scoring budget) is truncated to a chunk (is_chunked =
  // true, fill_ids and extend_input_len cut).
  AddResult add_one_req(Req& req, const std::function<void(Req&)>& lock);

  // The request chunked in the previous round resumes first: it already holds its lock and
  // memory for what it computed, so only the chunk (and scoring) budgets apply.
  void add_chunked_req(Req& req);

  // A running request was preempted (retracted): its running slot and the future tokens it was
  // reserved (`reserved_tokens`, counted in the running reservation) are free again.
  void release_running(int64_t reserved_tokens);
  bool out_of_running_slots() const { return free_running_slots_ <= 0; }

  const std::vector<Req*>& can_run_list() const { return can_run_list_; }
  Req* new_chunked_req() const { return new_chunked_req_; }
  int64_t rem_total_tokens() const { return available_and_evictable_() - total_offset_; }
  // The KV tokens `req` needs to be taken whole: its input and its future tokens.
  static int64_t tokens_needed(const Req& req);

 private:
  AddResult budget_state() const;
  // Input tokens `req` may add to the batch now (before chunking).
  int64_t room_for(const Req& req) const;
  // Books up to `tokens` of `req`'s input into the batch, chunking it when they are fewer than
  // its extend length.
  void take(Req& req, int64_t tokens);

  std::function<int64_t()> available_and_evictable_;
  int64_t total_offset_;  // tokens promised: running reservation + admitted requests
  int64_t rem_input_tokens_;
  int64_t rem_chunk_tokens_;  // INT64_MAX when chunking is off
  int64_t forward_input_tokens_;
  int32_t free_running_slots_;
  bool nothing_running_;
  int64_t rem_scoring_tokens_;  // binds once the batch scores a prompt
  bool scoring_ = false;        // an admitted request wants its prompt's logprobs
  std::vector<Req*> can_run_list_;
  Req* new_chunked_req_ = nullptr;
};

}  // namespace sgl::scheduler
