// Scheduler, speculative decoding: the drafts a decode step verifies (n-gram lookups or EAGLE's
// placeholders, as many as the draft length policy allows), verify entries, acceptance (the
// accepted positions' KV kept, the rest freed at once) and the policy's measurements.
#include <algorithm>
#include <limits>
#include <sstream>

#include "core/check.h"
#include "core/logging.h"
#include "scheduler/scheduler.h"
#include "speculative/draft_acceptance.h"
#include "speculative/draft_length_policy.h"
#include "speculative/ngram_drafter.h"

namespace sgl::scheduler {
namespace {

constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();

// Cuts `drafts` at the first one the grammar refuses (the target's masked sample there can never
// equal it) and after one that ends the grammar; the matcher is left as it was.
void cut_to_grammar(grammar::ReasonerGrammarMatcher& grammar, std::vector<int32_t>& drafts) {
  int32_t taken = 0;
  for (int32_t draft : drafts) {
    if (grammar.is_terminated() || !grammar.accept_token(draft)) break;
    ++taken;
  }
  if (taken > 0) grammar.rollback(taken);
  drafts.resize(static_cast<size_t>(taken));
}

}  // namespace

int32_t Scheduler::draft_room(const Req& req, int32_t budget) const {
  // Drafts need one result row per position; logit processing and grammars read a single row
  // per step, so those requests decode plainly (min_new_tokens' mask only while it holds, a
  // thinking budget's while no draft can reach its forced close: the counts are exact here,
  // drafts are planned with no batch of the request in flight).
  const sampling::SamplingParams& p = req.request.sampling;
  const bool before_min_tokens = static_cast<int64_t>(req.output_ids.size()) < p.min_new_tokens;
  // The verify step's tokens (drafts + 1) must all be free of any mask, unless the drafts are
  // the scheduler's (n-grams) and a grammar alone holds them: drafts_for then cuts them where it
  // refuses, and each verify row gets its mask (plan_vocab_mask).
  const bool checked =
      req.grammar && req.grammar->checks_drafts() && !options_.speculative.drafts_in_runner();
  const int64_t free = req.grammar && !checked ? req.grammar->free_tokens() : kUnbounded;
  // Hidden states and routed experts are reported for the positions a step keeps, which drafts
  // would blur.
  if (req.output_ids.empty() || free <= 1 || p.has_penalties_or_bias() || before_min_tokens ||
      req.draft_stale || req.request.reports_positions()) {
    return 0;
  }
  // Each accepted draft is an output token, and the drafts' positions must fit the context.
  const int64_t left = req.request.max_new_tokens - static_cast<int64_t>(req.output_ids.size());
  const int64_t room = max_context_len_ - 1 - req.kv_len;
  const int64_t most = std::min<int64_t>(
      {options_.speculative.num_draft_tokens - 1, budget, left - 1, room, free - 1});
  return static_cast<int32_t>(std::max<int64_t>(most, 0));
}

bool Scheduler::drafts_wait_for_results(int32_t budget) const {
  if (!options_.speculative.enabled() || budget <= 0) return false;
  return std::any_of(running_.begin(), running_.end(), [&](const Req* r) {
    return r->decodes_more() && r->last_batch_id > last_processed_batch_id_ &&
           draft_room(*r, budget) > 0;
  });
}

int32_t Scheduler::drafts_allowed_now(const Req& req, int32_t budget) const {
  // Drafts need the request's last token on the host: no batch of it in flight.
  return req.last_batch_id > last_processed_batch_id_ ? 0 : draft_room(req, budget);
}

std::vector<int32_t> Scheduler::drafts_for(const Req& req, int32_t budget) const {
  const int32_t max_drafts = drafts_allowed_now(req, budget);
  if (max_drafts <= 0) return {};
  const speculative::SpeculativeOptions& spec = options_.speculative;
  // EAGLE: the batch runner drafts into these slots; the ids come back with the result.
  if (spec.drafts_in_runner()) return std::vector<int32_t>(static_cast<size_t>(max_drafts), 0);
  std::vector<int32_t> drafts = speculative::ngram_draft(
      req.all_token_ids(), max_drafts, spec.ngram_min_match_window, spec.ngram_max_match_window);
  if (req.grammar && req.grammar->checks_drafts()) cut_to_grammar(*req.grammar, drafts);
  return drafts;
}

std::vector<std::vector<int32_t>> Scheduler::plan_drafts(int64_t needed, int32_t budget) const {
  if (!options_.speculative.enabled()) return {};
  std::vector<std::vector<int32_t>> drafts(running_.size());
  int64_t draft_slots = 0;
  // Every token of a verify batch is a logits row: drafts past the runner's bound are cut.
  int64_t room = options_.max_verify_tokens > 0 ? options_.max_verify_tokens - needed
                                                : std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < running_.size(); ++i) {
    if (!running_[i]->decodes_more()) continue;
    drafts[i] = drafts_for(*running_[i], budget);
    if (static_cast<int64_t>(drafts[i].size()) > room) {
      drafts[i].resize(static_cast<size_t>(std::max<int64_t>(room, 0)));
    }
    room -= static_cast<int64_t>(drafts[i].size());
    draft_slots += static_cast<int64_t>(drafts[i].size());
  }
  // The KV cache must hold every draft, or this step decodes plainly.
  if (allocator_.available() + tree_.evictable_size() < needed + draft_slots) {
    for (auto& d : drafts) d.clear();
  }
  return drafts;
}

void Scheduler::add_verify_entry(Req& req, std::vector<int32_t> drafts, ScheduleBatch& batch) {
  const auto n = static_cast<int32_t>(1 + drafts.size());
  std::optional<std::vector<int32_t>> slots = alloc_slots(n);
  SGL_CHECK(slots.has_value()) << "verify slots were checked";
  req_to_token_.write(req.req_pool_idx, req.kv_len, *slots);
  BatchEntry entry{&req, req.kv_len, n, {req.output_ids.back()}, true};
  entry.input_ids.insert(entry.input_ids.end(), drafts.begin(), drafts.end());
  entry.draft_ids = std::move(drafts);
  batch.entries.push_back(std::move(entry));
  batch.out_cache_loc.insert(batch.out_cache_loc.end(), slots->begin(), slots->end());
  req.kv_len += n;
  ++req.scheduled_samples;
}

void Scheduler::follow_draft_policy(int32_t drafts, bool exploring, bool verify,
                                    ScheduleBatch& batch) {
  // Plain decoding measured best: an EAGLE draft stops following these requests, so the batch
  // runs at plain decoding's speed. (While exploring, plain steps still extend the draft, so the
  // draft counts stay comparable; that measures plain decoding a little slow.)
  bool stale = true;
  for (const BatchEntry& e : batch.entries) stale = stale && e.req->draft_stale;
  if (!verify && options_.speculative.drafts_in_runner() &&
      (stale || (drafts == 0 && !exploring))) {
    batch.skip_draft = true;
    for (const BatchEntry& e : batch.entries) {
      // This step's position (a plain decode) is the first without the draft's KV.
      if (!e.req->draft_stale) e.req->draft_valid_len = e.req->kv_len - e.extend_len;
      e.req->draft_stale = true;
    }
  }
  const auto batch_size = static_cast<int32_t>(batch.entries.size());
  // Timed as the count chosen (n-gram lookups may find fewer drafts: that is what the count
  // yields), unless nothing verified (stale drafts, no lookup found any): a plain step's time.
  policy_steps_.push_back({next_batch_id_, batch_size, verify ? drafts : 0});
  if (log_enabled(LogLevel::kDebug)) {
    int32_t most = 0;
    for (const BatchEntry& e : batch.entries) most = std::max(most, e.extend_len - 1);
    std::ostringstream rates;
    for (int32_t k = 0; k <= draft_policy_->max_drafts(); ++k) {
      rates << " " << k << ":" << draft_policy_->rate(batch_size, k) << "/"
            << draft_policy_->expected_accepted(k);
    }
    SGL_LOG_DEBUG << "draft policy: batch " << batch_size << " chose " << drafts
                  << (exploring ? " (exploring)" : "") << ", verifies " << most
                  << (batch.skip_draft ? ", draft skipped" : "")
                  << "; tokens/s per request / expected accepted:" << rates.str();
  }
}

void Scheduler::record_decode_time(int64_t batch_id, double seconds) {
  while (!policy_steps_.empty() && policy_steps_.front().batch_id < batch_id) {
    policy_steps_.pop_front();  // never timed (the engine times decode batches only)
  }
  if (draft_policy_ == nullptr || policy_steps_.empty() ||
      policy_steps_.front().batch_id != batch_id) {
    return;
  }
  const PolicyStep& step = policy_steps_.front();
  draft_policy_->record_step(step.batch_size, step.drafts, seconds);
  policy_steps_.pop_front();
}

std::vector<int32_t> Scheduler::accept_drafts(Req& req, const BatchEntry& entry,
                                              std::span<const int32_t> sampled) {
  const auto drafts = static_cast<int32_t>(entry.draft_ids.size());
  std::vector<int32_t> kept = {0};  // the root, then the accepted nodes
  const std::span<const int32_t> slots = req_to_token_.row(req.req_pool_idx);
  if (entry.draft_parents.empty()) {
    const int32_t accepted = speculative::accepted_drafts(entry.draft_ids, sampled);
    for (int32_t n = 1; n <= accepted; ++n) kept.push_back(n);
  } else {
    // A tree: the accepted nodes' slots move to the positions after the root (page size 1: the
    // row is remapped, no K/V copied); every other node's slot goes back with the rejected.
    for (int32_t n : speculative::accepted_path(entry.draft_ids, entry.draft_parents, sampled)) {
      kept.push_back(n);
    }
    std::vector<int32_t> path_slots, rejected;
    std::vector<bool> on_path(static_cast<size_t>(drafts + 1), false);
    for (int32_t n : kept) on_path[static_cast<size_t>(n)] = true;
    for (int32_t n : kept) path_slots.push_back(slots[static_cast<size_t>(entry.prefix_len + n)]);
    for (int32_t n = 0; n <= drafts; ++n) {
      if (!on_path[static_cast<size_t>(n)]) {
        rejected.push_back(slots[static_cast<size_t>(entry.prefix_len + n)]);
      }
    }
    req_to_token_.write(req.req_pool_idx, entry.prefix_len, path_slots);
    req_to_token_.write(req.req_pool_idx, entry.prefix_len + static_cast<int32_t>(kept.size()),
                        rejected);
  }
  const auto accepted = static_cast<int32_t>(kept.size()) - 1;
  // Positions prefix_len .. prefix_len + accepted hold known tokens; the rejected drafts' slots
  // go back at once.
  const int32_t keep = entry.prefix_len + 1 + accepted;
  allocator_.free(slots.subspan(keep, req.kv_len - keep));
  req.kv_len = keep;
  req.scheduled_samples += accepted;
  return kept;
}

}  // namespace sgl::scheduler
