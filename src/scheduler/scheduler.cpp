// Scheduler: requests in (validation, queueing, aborts, timeouts), the next batch chosen, grammar
// masks planned for it, KV slot allocation, stats and integrity checks.
#include "scheduler/scheduler.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/check.h"
#include "core/logging.h"
#include "speculative/draft_length_policy.h"

namespace sgl::scheduler {

Scheduler::Scheduler(const SchedulerOptions& options, int32_t num_kv_slots, int32_t max_context_len,
                     std::vector<int32_t> eos_token_ids, int64_t vocab_size)
    : options_(options),
      max_context_len_(max_context_len),
      eos_token_ids_(std::move(eos_token_ids)),
      vocab_size_(vocab_size),
      // NOTE: finished requests keep their row until the batch still reading it completes, so
      // the overlap loop needs room for a second generation of rows.
      req_to_token_(2 * options.max_running_requests + 2, max_context_len),
      allocator_(num_kv_slots),
      tree_(options.disable_radix_cache),
      rng_(options.random_seed),
      new_token_ratio_(options.init_new_token_ratio()) {
  req_to_token_.record_writes();  // batches carry them to the runner's copy
  totals_.kv_capacity = allocator_.capacity();
  const speculative::SpeculativeOptions& spec = options_.speculative;
  if (spec.enabled() && spec.adaptive_drafts) {
    // A chain's first k drafts are what k drafts would have been; a tree's best k nodes are
    // not a smaller tree's.
    const bool nested = !(spec.drafts_in_runner() && spec.eagle_topk > 1);
    draft_policy_ =
        std::make_unique<speculative::DraftLengthPolicy>(spec.num_draft_tokens - 1, nested);
  }
}

Scheduler::~Scheduler() {
  // A runner may still wait for a mask: release it with none (its batch's result is dropped).
  for (PendingMask& pending : pending_masks_) pending.promise.set_value({});
  for (auto& [rid, req] : reqs_) req->lock.reset();  // locks must not outlive the tree
}

Status Scheduler::validate(const GenerateRequest& r) const {
  SGL_RETURN_IF_ERROR(r.sampling.validate());
  if (r.input_ids.empty()) return invalid_argument("the prompt is empty");
  if (r.max_new_tokens < 0) return invalid_argument("max_new_tokens must be >= 0");
  if (r.top_logprobs_num < 0) return invalid_argument("top_logprobs_num must be >= 0");
  if (static_cast<int64_t>(r.token_ids_logprob.size()) > sampling::kMaxTokenIdsLogprob) {
    return invalid_argument("token_ids_logprob may list at most " +
                            std::to_string(sampling::kMaxTokenIdsLogprob) + " token ids, got " +
                            std::to_string(r.token_ids_logprob.size()));
  }
  for (int32_t id : r.token_ids_logprob) {
    if (id < 0)
      return invalid_argument("token_ids_logprob: invalid token id " + std::to_string(id));
  }
  if (is_embedding() && (r.max_new_tokens != 0 || r.return_logprob || r.grammar)) {
    return invalid_argument(
        "the model is an embedding model: it encodes prompts and generates nothing (no "
        "max_new_tokens, no logprobs, no grammar)");
  }
  const auto len = static_cast<int64_t>(r.input_ids.size());
  if (r.logprob_start_len < -1 || r.logprob_start_len >= len) {
    return invalid_argument("logprob_start_len must be -1 or in [0, " + std::to_string(len) +
                            ") (the prompt length), got " + std::to_string(r.logprob_start_len));
  }
  if (len >= max_context_len_) {
    return invalid_argument("the prompt has " + std::to_string(len) +
                            " tokens; the context length is " + std::to_string(max_context_len_));
  }
  // max_new_tokens is clamped to what the KV cache holds (add_request), as SGLang's max_req_len
  // does; only a prompt that leaves no slot to generate into is refused (one that generates
  // nothing, an embedding or a prompt scoring, may fill the cache).
  if (len > allocator_.capacity() || (len == allocator_.capacity() && r.max_new_tokens > 0)) {
    return invalid_argument("the prompt has " + std::to_string(len) +
                            " tokens; the KV cache holds " + std::to_string(allocator_.capacity()) +
                            " (--max-total-tokens, --mem-fraction-static)");
  }
  return Status::ok_status();
}

bool Scheduler::add_request(uint64_t rid, GenerateRequest request) {
  SGL_CHECK(!reqs_.count(rid)) << "duplicate request id " << rid;
  const PriorityOptions& priority = options_.priority;
  const int64_t resolved = priority.resolve(request.priority);
  // Counted as the engine counts before it accepts a submit (queued or running: a burst that
  // lands between two steps arrives here before any of it is admitted), so a request the engine
  // accepted is not refused here. With priority scheduling the engine lets every request through
  // and the least preferred waiting one goes (SGLang's), unless that is this one.
  if (options_.max_queued_requests > 0 &&
      static_cast<int64_t>(waiting_.size() + running_.size()) >=
          options_.max_queued_requests + options_.max_running_requests &&
      !(priority.enabled && evict_for_priority(resolved))) {
    return false;
  }
  auto req = std::make_unique<Req>();
  req->rid = rid;
  req->priority = resolved;
  const bool refuse_priority =
      !priority.enabled && priority.abort_when_disabled && request.priority.has_value();
  req->request = std::move(request);
  // Generation stops at the context length, or where the request alone fills the KV cache
  // (SGLang clamps max_new_tokens to its max_req_len the same way).
  req->request.max_new_tokens =
      std::min({req->request.max_new_tokens, max_context_len_ - req->prompt_len(),
                allocator_.capacity() - req->prompt_len()});
  if (req->request.grammar || req->request.reasoning_gate.has_budget()) {
    req->grammar = std::make_unique<grammar::ReasonerGrammarMatcher>(
        req->request.grammar, req->request.reasoning_gate, vocab_size_);
  }
  // (N-gram drafts are the scheduler's, so a grammar checks them; EAGLE's come from the runner.)
  if (options_.speculative.enabled() &&
      ((req->request.grammar && options_.speculative.drafts_in_runner()) ||
       req->request.sampling.has_penalties_or_bias() || req->request.reports_positions())) {
    ++totals_.spec_plain_requests;
    if (!std::exchange(logged_spec_plain_, true)) {
      SGL_LOG_INFO << "speculative decoding: requests with penalties, logit_bias, "
                      "return_hidden_states or return_routed_experts (and with EAGLE, a "
                      "grammar) decode without drafts (counted in spec_plain_requests)";
    }
  }
  Req* raw = req.get();
  reqs_.emplace(rid, std::move(req));
  if (refuse_priority) {
    finish(*raw, {FinishReason::kAbort, -1,
                  "Using priority is disabled for this server. Please send a new request without "
                  "a priority.",
                  kServiceUnavailable});
    release_ready();
    return true;
  }
  if (raw->request.max_new_tokens == 0 && !raw->wants_input_logprobs() && !is_embedding()) {
    finish(*raw, {FinishReason::kLength, -1, ""});
    release_ready();
    return true;
  }
  waiting_.push_back(raw);
  return true;
}

Req* Scheduler::find(uint64_t rid) {
  auto it = reqs_.find(rid);
  return it == reqs_.end() ? nullptr : it->second.get();
}

void Scheduler::abort(uint64_t rid, const std::string& message, int32_t status_code) {
  Req* req = find(rid);
  if (req == nullptr || req->finished) return;
  finish(*req, {FinishReason::kAbort, -1, message, status_code});
  release_ready();
}

bool Scheduler::flush_cache(bool ignore_waiting) {
  const bool quiet = ignore_waiting ? running_.empty() && chunked_req_ == nullptr : idle();
  if (!quiet || in_flight_batches() > 0 || !to_release_.empty()) return false;
  return tree_.reset(allocator_);
}

void Scheduler::emit(const Req& req, ReqUpdate update) {
  update.rid = req.rid;
  update.prompt_tokens = req.prompt_len();
  update.completion_tokens = static_cast<int32_t>(req.output_ids.size());
  update.cached_tokens = req.cached_tokens;
  update.retractions = req.retract_count;
  updates_.push_back(std::move(update));
}

void Scheduler::take_updates(std::vector<ReqUpdate>* out) {
  out->clear();
  out->swap(updates_);
}

std::optional<std::vector<int32_t>> Scheduler::alloc_slots(int32_t n) {
  if (allocator_.available() < n) tree_.evict(n - allocator_.available(), allocator_);
  return allocator_.alloc(n);
}

std::optional<int32_t> Scheduler::alloc_slot() {
  if (allocator_.available() < 1) tree_.evict(1 - allocator_.available(), allocator_);
  return allocator_.alloc_one();
}

NextBatch Scheduler::get_next_batch_to_run() {
  handle_timeouts();
  release_ready();
  std::erase_if(running_, [](const Req* r) { return r->finished.has_value(); });
  if (chunked_req_ != nullptr) cache_unfinished(*chunked_req_);
  // Publish freshly prefilled prompts so waiting requests sharing them hit the cache (SGLang
  // does this when the prefill result is processed), in the overlap loop while the request's
  // batch is still in flight, as a chunked request's chunk is: that batch reads the runner's
  // copy of the row (brought up to date only by later batches), and duplicate slots this frees
  // are taken only by batches that run after it on the device.
  for (Req* req : running_) {
    if (!req->prefill_cached) {
      cache_unfinished(*req);
      req->prefill_cached = true;
    }
  }

  NextBatch next;
  drain_for_preemption_ = false;
  next.batch = get_new_batch_prefill();
  if (!next.batch && drain_for_preemption_) {
    next.need_drain = true;  // a preemption, once the batches in flight are done
    return next;
  }
  if (!next.batch) next.batch = get_decode_batch(&next.need_drain);
  // Idle, the next burst is admitted as the first was (SGLang resets the ratio when idle): a
  // ratio decayed by a long run would over-admit it, one raised by a retraction under-admit it.
  if (!next.batch && idle()) new_token_ratio_ = options_.init_new_token_ratio();
  if (next.batch) {
    next.batch->id = next_batch_id_++;
    next.batch->req_to_token_writes = req_to_token_.take_writes();
    for (const BatchEntry& e : next.batch->entries) e.req->last_batch_id = next.batch->id;
    plan_vocab_mask(*next.batch);
  }
  return next;
}

void Scheduler::plan_vocab_mask(ScheduleBatch& batch) {
  PendingMask pending;
  pending.batch_id = batch.id;
  // The tokens the batches in flight before this one may still add to a request (a verify's
  // drafts and its own), none of them accepted by its matcher yet.
  const int64_t per_batch =
      options_.speculative.enabled() ? options_.speculative.num_draft_tokens : 1;
  const int64_t unaccepted = (batch.id - 1 - last_processed_batch_id_) * per_batch;
  int32_t first_row = 0;  // mask rows are sampled rows (a verify entry has 1 + drafts)
  for (const BatchEntry& e : batch.entries) {
    // No row where no mask can hold the tokens this entry samples (a thinking budget far from
    // its end): the batch then needs no mask, and the runner does not wait for the host's
    // processing of the batch before it to sample.
    if (e.samples && e.req->grammar &&
        e.req->grammar->free_tokens() < unaccepted + e.sample_rows()) {
      const bool checked = e.req->grammar->checks_drafts() && !e.draft_ids.empty();
      pending.rows.push_back({first_row, e.req, checked ? e.draft_ids : std::vector<int32_t>{}});
    }
    first_row += e.sample_rows();
  }
  if (pending.rows.empty()) return;
  batch.vocab_mask = pending.promise.get_future().share();
  pending_masks_.push_back(std::move(pending));
  fill_ready_masks();  // without overlap, the batch before is already processed
}

void Scheduler::fill_ready_masks() {
  while (!pending_masks_.empty() &&
         pending_masks_.front().batch_id - 1 <= last_processed_batch_id_) {
    PendingMask& pending = pending_masks_.front();
    sampling::VocabMask mask;
    for (const MaskedEntry& entry : pending.rows) {
      Req* req = entry.req;
      // A request that finished meanwhile samples a token that is dropped: no mask needed; nor
      // does one whose grammar waits for the end of its reasoning.
      if (req->finished || !req->grammar->constrains_next()) continue;
      if (mask.rows.empty()) mask.words = req->grammar->bitmask_words();
      auto add_row = [&](int32_t row) {
        mask.rows.push_back(row);
        mask.bits.resize(mask.rows.size() * static_cast<size_t>(mask.words));
        req->grammar->fill_next_token_bitmask(mask.bits.data() +
                                              (mask.rows.size() - 1) * mask.words);
      };
      add_row(entry.first_row);
      // Each draft's row as the grammar stands after the drafts before it (drafts_for checked
      // that it takes them all), then the grammar back as it was.
      int32_t taken = 0;
      for (int32_t draft : entry.drafts) {
        if (!req->grammar->accept_token(draft)) break;
        add_row(entry.first_row + ++taken);
      }
      if (taken > 0) req->grammar->rollback(taken);
    }
    pending.promise.set_value(std::move(mask));
    pending_masks_.pop_front();
  }
}

void Scheduler::handle_timeouts() {
  if (options_.waiting_timeout_s <= 0 && options_.running_timeout_s <= 0) return;
  const Clock::time_point now = Clock::now();
  std::vector<Req*> expired;
  for (auto& [rid, req] : reqs_) {
    if (req->finished) continue;
    const double waited = std::chrono::duration<double>(now - req->arrival_time).count();
    const bool waiting = !req->first_schedule_time.has_value();
    if (waiting && options_.waiting_timeout_s > 0 && waited > options_.waiting_timeout_s) {
      expired.push_back(req.get());
    } else if (!waiting && options_.running_timeout_s > 0 &&
               std::chrono::duration<double>(now - *req->first_schedule_time).count() >
                   options_.running_timeout_s) {
      expired.push_back(req.get());
    }
  }
  for (Req* req : expired) {
    const bool waiting = !req->first_schedule_time.has_value();
    finish(*req, {FinishReason::kAbort, -1,
                  waiting ? "request timed out while waiting" : "request timed out while running",
                  kServiceUnavailable});
  }
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats s = totals_;
  s.num_running = static_cast<int64_t>(running_.size()) + (chunked_req_ != nullptr ? 1 : 0);
  s.num_waiting = static_cast<int64_t>(waiting_.size());
  s.kv_used = allocator_.capacity() - allocator_.available();
  s.kv_cached = tree_.total_size();
  s.kv_evictable = tree_.evictable_size();
  for (const Req* req : waiting_) {
    s.waiting_tokens +=
        static_cast<int64_t>(req->request.input_ids.size() + req->output_ids.size());
  }
  s.new_token_ratio = new_token_ratio_;
  return s;
}

Status Scheduler::check_integrity() const {
  SGL_RETURN_IF_ERROR(allocator_.check_integrity());
  SGL_RETURN_IF_ERROR(req_to_token_.check_integrity());
  int64_t held = 0, rows = 0;
  for (const auto& [rid, req] : reqs_) {
    if (req->req_pool_idx >= 0) {
      ++rows;
      held += req->kv_len - req->borrowed_len;
    } else if (req->kv_len != 0) {
      return internal_error("request " + std::to_string(rid) + " has KV but no row");
    }
  }
  if (rows != req_to_token_.size() - req_to_token_.available()) {
    return internal_error("req_to_token rows in use " +
                          std::to_string(req_to_token_.size() - req_to_token_.available()) +
                          " but requests hold " + std::to_string(rows));
  }
  return tree_.check_integrity(allocator_, held);
}

}  // namespace sgl::scheduler
