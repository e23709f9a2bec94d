// Scheduler, decoding: a decode batch of every running request (verify entries where drafts are
// planned), retracting requests back to the waiting queue when the KV cache runs out.
#include <algorithm>
#include <vector>

#include "core/check.h"
#include "scheduler/scheduler.h"
#include "speculative/draft_length_policy.h"

namespace sgl::scheduler {
namespace {

// Retraction assumes each survivor decodes this many more steps before the ratio settles
// (SGLang's RETRACT_DECODE_STEPS).
constexpr int64_t kRetractDecodeSteps = 20;

}  // namespace

double Scheduler::reserved_tokens(const Req& req) const {
  const int64_t left =
      std::min<int64_t>(req.request.max_new_tokens - req.scheduled_samples, kClipMaxNewTokens);
  return static_cast<double>(std::max<int64_t>(left, 0)) * new_token_ratio_;
}

int64_t Scheduler::reserved_decode_tokens() const {
  double reserved = 0;
  for (const Req* r : running_) reserved += reserved_tokens(*r);
  return static_cast<int64_t>(reserved);
}

void Scheduler::add_decode_entry(Req& req, ScheduleBatch& batch) {
  const std::optional<int32_t> slot = alloc_slot();
  SGL_CHECK(slot.has_value()) << "decode slots were checked";
  req_to_token_.write(req.req_pool_idx, req.kv_len, std::span(&*slot, 1));
  batch.entries.push_back({&req, req.kv_len, 1, {}, true});
  batch.out_cache_loc.push_back(*slot);
  ++req.kv_len;
  ++req.scheduled_samples;
}

std::optional<ScheduleBatch> Scheduler::get_decode_batch(bool* need_drain) {
  const auto decodable = [](const Req* r) { return r->decodes_more(); };
  int64_t needed = std::count_if(running_.begin(), running_.end(), decodable);
  if (needed == 0) return std::nullopt;
  // A retraction sets new_token_ratio_ itself; only a step without one decays it (SGLang's).
  bool retracted = false;
  if (allocator_.available() + tree_.evictable_size() < needed) {
    if (in_flight_batches() > 0) {
      *need_drain = true;
      return std::nullopt;
    }
    retract_for_decode(needed);
    retracted = true;
    needed = std::count_if(running_.begin(), running_.end(), decodable);
    if (needed == 0) return std::nullopt;
  }
  // Speculative decoding: the drafts each request verifies in this step (none: plain decode).
  speculative::DraftLengthPolicy::Choice choice{options_.speculative.num_draft_tokens - 1, false};
  if (draft_policy_ != nullptr) {
    // A choice that waited for the batch in flight (a drain) is the one taken after it: choosing
    // again would lose the policy's exploring turns whenever plain decoding is the best.
    // (Only for a batch of the size it was chosen for: the policy's buckets are by batch size.)
    const bool same_batch = drained_choice_ && drained_choice_->batch_size == needed;
    choice =
        same_batch ? drained_choice_->choice : draft_policy_->choose(static_cast<int32_t>(needed));
    drained_choice_.reset();
  }
  if (drafts_wait_for_results(choice.drafts)) {
    if (draft_policy_ != nullptr) drained_choice_ = DrainedChoice{choice, needed};
    *need_drain = true;
    return std::nullopt;
  }
  std::vector<std::vector<int32_t>> drafts = plan_drafts(needed, choice.drafts);
  ScheduleBatch batch;
  batch.mode = ForwardMode::kDecode;
  batch.entries.reserve(static_cast<size_t>(needed));
  batch.out_cache_loc.reserve(static_cast<size_t>(needed));
  bool plain = false, verify = false;
  int32_t found_none = 0;  // n-gram lookups offered drafts that found none
  for (size_t i = 0; i < running_.size(); ++i) {
    Req* req = running_[i];
    if (!decodable(req)) continue;
    if (drafts.empty() || drafts[i].empty()) {
      found_none += !drafts.empty() && drafts_allowed_now(*req, choice.drafts) > 0;
      add_decode_entry(*req, batch);
      plain = true;
    } else {
      add_verify_entry(*req, std::move(drafts[i]), batch);
      verify = true;
    }
  }
  // Verify entries are extends over a cached prefix (TARGET_VERIFY); plain decodes ride along
  // as in MIXED.
  if (verify) batch.mode = plain ? ForwardMode::kMixed : ForwardMode::kTargetVerify;
  if (draft_policy_ != nullptr) {
    // A request whose lookup found nothing gains no token from the count chosen: to the
    // policy, its first draft did not stand. (Only when the step verified: otherwise every
    // draft was dropped for the KV cache, not missing.)
    if (verify && !options_.speculative.drafts_in_runner()) {
      for (int32_t n = 0; n < found_none; ++n) draft_policy_->record_acceptance(choice.drafts, 0);
    }
    follow_draft_policy(choice.drafts, choice.exploring, verify, batch);
  }
  totals_.computed_tokens_total += static_cast<int64_t>(batch.out_cache_loc.size());
  if (!retracted) {
    new_token_ratio_ = std::max(new_token_ratio_ - options_.new_token_ratio_decay(),
                                options_.min_new_token_ratio());
  }
  return batch;
}

void Scheduler::retract(Req& req) {
  unschedule(req);
  waiting_.push_front(&req);
}

void Scheduler::unschedule(Req& req) {
  release(req);  // KV back to the cache/allocator; the request itself lives on
  req.prefix_indices.clear();
  req.fill_ids.clear();
  req.is_chunked = false;
  req.prefill_cached = false;
  req.scheduled_samples = static_cast<int32_t>(req.output_ids.size());
  ++req.retract_count;
  ++totals_.num_retracted_total;
}

void Scheduler::retract_all() {
  SGL_CHECK_EQ(in_flight_batches(), 0) << "retracting requests that batches in flight still read";
  // Pushed to the front in reverse, so the waiting queue keeps the running order.
  for (auto it = running_.rbegin(); it != running_.rend(); ++it) retract(**it);
  running_.clear();
  if (chunked_req_ != nullptr) {
    retract(*chunked_req_);
    chunked_req_ = nullptr;
  }
}

void Scheduler::retract_for_decode(int64_t needed) {
  // Retract the requests with the fewest output tokens (then the longest prompts) first; with
  // --retraction-policy priority, the least preferred priority before that.
  std::vector<Req*> order = running_;
  const PriorityOptions& priority = options_.priority;
  std::stable_sort(order.begin(), order.end(), [&](const Req* a, const Req* b) {
    if (priority.retract_by_priority && a->priority != b->priority) {
      return priority.prefers(a->priority, b->priority);
    }
    if (a->output_ids.size() != b->output_ids.size())
      return a->output_ids.size() > b->output_ids.size();
    return a->prompt_len() < b->prompt_len();
  });
  while (!order.empty() && allocator_.available() + tree_.evictable_size() < needed) {
    Req* req = order.back();
    order.pop_back();
    std::erase(running_, req);
    --needed;
    retract(*req);
  }
  // The survivors' future tokens were underestimated: raise the ratio (SGLang's formula).
  int64_t decoded = 0, max_new = 0;
  for (const Req* r : running_) {
    decoded += static_cast<int64_t>(r->output_ids.size());
    max_new += r->request.max_new_tokens;
  }
  if (max_new > 0) {
    new_token_ratio_ = std::min(
        1.0,
        static_cast<double>(decoded + kRetractDecodeSteps * static_cast<int64_t>(running_.size())) /
            static_cast<double>(max_new));
  }
}

}  // namespace sgl::scheduler
