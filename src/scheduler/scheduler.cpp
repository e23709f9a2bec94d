// Scheduler: admission (prefill), decode, retraction, result processing and release.
#include "scheduler/scheduler.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "core/check.h"
#include "core/logging.h"
#include "scheduler/prefill_adder.h"
#include "scheduler/schedule_policy.h"
#include "speculative/draft_length_policy.h"

namespace sgl::scheduler {
namespace {

int64_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int64_t>(i);
}

bool contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// Retraction assumes each survivor decodes this many more steps before the ratio settles
// (SGLang's RETRACT_DECODE_STEPS).
constexpr int64_t kRetractDecodeSteps = 20;

}  // namespace

Scheduler::Scheduler(const SchedulerOptions& options, int32_t num_kv_slots, int32_t max_context_len,
                     std::vector<int32_t> eos_token_ids)
    : options_(options),
      max_context_len_(max_context_len),
      eos_token_ids_(std::move(eos_token_ids)),
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
  // Counted as the engine counts before it accepts a submit (queued or running: a burst that
  // lands between two steps arrives here before any of it is admitted), so a request the engine
  // accepted is not refused here.
  if (options_.max_queued_requests > 0 &&
      static_cast<int64_t>(waiting_.size() + running_.size()) >=
          options_.max_queued_requests + options_.max_running_requests) {
    return false;
  }
  auto req = std::make_unique<Req>();
  req->rid = rid;
  req->request = std::move(request);
  // Generation stops at the context length, or where the request alone fills the KV cache
  // (SGLang clamps max_new_tokens to its max_req_len the same way).
  req->request.max_new_tokens =
      std::min({req->request.max_new_tokens, max_context_len_ - req->prompt_len(),
                allocator_.capacity() - req->prompt_len()});
  if (req->request.grammar) {
    req->grammar = std::make_unique<grammar::ReasonerGrammarMatcher>(req->request.grammar,
                                                                     req->request.reasoning_gate);
  }
  if (options_.speculative.enabled() &&
      (req->grammar || req->request.sampling.has_penalties_or_bias())) {
    ++totals_.spec_plain_requests;
    if (!std::exchange(logged_spec_plain_, true)) {
      SGL_LOG_INFO << "speculative decoding: requests with a grammar, penalties or logit_bias "
                      "decode without drafts (counted in spec_plain_requests)";
    }
  }
  Req* raw = req.get();
  reqs_.emplace(rid, std::move(req));
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

bool Scheduler::flush_cache() {
  if (!idle() || in_flight_batches() > 0 || !to_release_.empty()) return false;
  return tree_.reset(allocator_);
}

void Scheduler::emit(const Req& req, ReqUpdate update) {
  update.rid = req.rid;
  update.prompt_tokens = req.prompt_len();
  update.completion_tokens = static_cast<int32_t>(req.output_ids.size());
  update.cached_tokens = req.cached_tokens;
  updates_.push_back(std::move(update));
}

void Scheduler::take_updates(std::vector<ReqUpdate>* out) {
  out->clear();
  out->swap(updates_);
}

int64_t Scheduler::reserved_decode_tokens() const {
  double reserved = 0;
  for (const Req* r : running_) {
    const int64_t left =
        std::min<int64_t>(r->request.max_new_tokens - r->scheduled_samples, kClipMaxNewTokens);
    reserved += static_cast<double>(std::max<int64_t>(left, 0)) * new_token_ratio_;
  }
  return static_cast<int64_t>(reserved);
}

std::optional<std::vector<int32_t>> Scheduler::alloc_slots(int32_t n) {
  if (allocator_.available() < n) tree_.evict(n - allocator_.available(), allocator_);
  return allocator_.alloc(n);
}

std::optional<int32_t> Scheduler::alloc_slot() {
  if (allocator_.available() < 1) tree_.evict(1 - allocator_.available(), allocator_);
  return allocator_.alloc_one();
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

size_t Scheduler::cache_key_length(const Req& req) const {
  // At least one token is computed, so there are logits to sample from; prompt logprobs need
  // logits from logprob_start_len on, so the cache may serve only the tokens before it.
  size_t key_len = req.fill_ids.size() - 1;
  if (req.wants_input_logprobs()) {
    key_len = std::min(key_len, static_cast<size_t>(req.request.logprob_start_len));
  }
  // Mean pooling reads every prompt token's hidden state: a cached prefix would have none.
  if (options_.pooler.type == PoolingType::kMean) key_len = 0;
  return key_len;
}

bool Scheduler::waits_for_in_batch_prefix(const Req& req, std::span<Req* const> admitted,
                                          bool any_shared_prefix) const {
  const auto key_len = static_cast<int64_t>(cache_key_length(req));
  if (key_len < kInBatchPrefixThreshold ||
      static_cast<int64_t>(req.prefix_indices.size()) >= kInBatchPrefixThreshold) {
    return false;  // the cache could not serve it, or already does
  }
  return std::any_of(admitted.begin(), admitted.end(), [&](const Req* other) {
    if (!any_shared_prefix && other->fill_ids != req.fill_ids) return false;
    return std::min(common_prefix(req.fill_ids, other->fill_ids), key_len) >=
           kInBatchPrefixThreshold;
  });
}

void Scheduler::init_next_round_input(Req& req) {
  req.fill_ids = req.all_token_ids();
  if (req.kv_len == 0) req.draft_stale = false;  // a prefill brings the draft up to date
  if (req.kv_len > 0) {
    // A chunked request resumes after what it computed (its prefix_indices, locked).
    req.extend_input_len = static_cast<int32_t>(req.fill_ids.size()) - req.kv_len;
    return;
  }
  const std::span<const int32_t> key(req.fill_ids.data(), cache_key_length(req));
  cache::MatchResult match = tree_.match_prefix(key);
  req.prefix_indices = std::move(match.device_indices);
  req.extend_input_len = static_cast<int32_t>(req.fill_ids.size() - req.prefix_indices.size());
  req.lock = tree_.lock(match.last_node);  // pinned until admission decides
}

bool Scheduler::prepare_extend_entry(Req& req, BatchEntry* entry,
                                     std::vector<int32_t>* out_cache_loc) {
  if (req.req_pool_idx < 0) {
    auto row = req_to_token_.alloc();
    SGL_CHECK(row.has_value()) << "ReqToTokenPool exhausted (sized for the running limit)";
    req.req_pool_idx = *row;
  }
  const auto prefix_len = static_cast<int32_t>(req.prefix_indices.size());
  auto slots = alloc_slots(req.extend_input_len);
  if (!slots) return false;
  if (req.kv_len == 0) req.borrowed_len = prefix_len;
  req_to_token_.write(req.req_pool_idx, 0, req.prefix_indices);
  req_to_token_.write(req.req_pool_idx, prefix_len, *slots);
  entry->req = &req;
  entry->prefix_len = prefix_len;
  entry->extend_len = req.extend_input_len;
  entry->input_ids.assign(req.fill_ids.begin() + prefix_len, req.fill_ids.end());
  out_cache_loc->insert(out_cache_loc->end(), slots->begin(), slots->end());
  entry->samples = !req.is_chunked;
  if (req.wants_input_logprobs()) {
    // Positions [start, prompt_len - 1) score the prompt token after them.
    const std::vector<int32_t>& prompt = req.origin_input_ids();
    const int32_t begin = std::max(prefix_len, req.request.logprob_start_len);
    const int32_t end = std::min(prefix_len + req.extend_input_len, req.prompt_len() - 1);
    entry->logprob_begin = begin;
    for (int32_t p = begin; p < end; ++p) entry->logprob_targets.push_back(prompt[p + 1]);
  }
  req.kv_len = prefix_len + req.extend_input_len;
  if (entry->samples) ++req.scheduled_samples;
  totals_.computed_tokens_total += req.extend_input_len;
  return true;
}

int32_t Scheduler::draft_cacheable_len(const Req& req) const {
  // EAGLE's draft shares the slots: positions it never saw (a stale request's) would give a later
  // request that hits them the draft's garbage KV, so they are not cached. (Never below what the
  // request already borrowed: its first caching came before it went stale, or stopped here.)
  if (req.draft_stale && options_.speculative.drafts_in_runner()) return req.draft_valid_len;
  return std::numeric_limits<int32_t>::max();
}

void Scheduler::cache_unfinished(Req& req) {
  const std::span<const int32_t> row = req_to_token_.row(req.req_pool_idx);
  // Positions whose tokens are known (a chunk's fill_ids; a decoder's prompt and outputs).
  std::vector<int32_t> tokens = req.is_chunked ? req.fill_ids : req.all_token_ids();
  const auto n = std::min(static_cast<int32_t>(std::min<size_t>(tokens.size(), req.kv_len)),
                          draft_cacheable_len(req));
  cache::CacheUnfinishedResult cached = tree_.cache_unfinished_req(
      std::span(tokens.data(), n), row.subspan(0, n), std::move(req.lock), allocator_);
  req_to_token_.write(req.req_pool_idx, 0, cached.kv_slots);
  req.prefix_indices = std::move(cached.kv_slots);
  req.lock = std::move(cached.lock);
  req.borrowed_len = tree_.disabled() ? 0 : n;
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
  next.batch = get_new_batch_prefill();
  if (!next.batch) next.batch = get_decode_batch(&next.need_drain);
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
  for (size_t i = 0; i < batch.entries.size(); ++i) {
    const BatchEntry& e = batch.entries[i];
    if (e.samples && e.req->grammar) pending.rows.emplace_back(static_cast<int32_t>(i), e.req);
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
    for (const auto& [row, req] : pending.rows) {
      // A request that finished meanwhile samples a token that is dropped: no mask needed; nor
      // does one whose grammar waits for the end of its reasoning.
      if (req->finished || !req->grammar->constrains_next()) continue;
      if (mask.rows.empty()) {
        mask.words = req->grammar->bitmask_words();
        mask.bits.reserve(pending.rows.size() * static_cast<size_t>(mask.words));
      }
      mask.rows.push_back(row);
      mask.bits.resize(mask.rows.size() * static_cast<size_t>(mask.words));
      req->grammar->fill_next_token_bitmask(mask.bits.data() + (mask.rows.size() - 1) * mask.words);
    }
    pending.promise.set_value(std::move(mask));
    pending_masks_.pop_front();
  }
}

std::optional<ScheduleBatch> Scheduler::get_new_batch_prefill() {
  if (waiting_.empty() && chunked_req_ == nullptr) return std::nullopt;
  const auto running_bs = static_cast<int32_t>(running_.size());
  if (running_bs >= options_.max_running_requests && chunked_req_ == nullptr) return std::nullopt;

  const SchedulePolicy applied = sort_waiting_queue(options_.policy, waiting_, tree_, rng_);
  const bool in_batch_prefix_caching =
      applied == SchedulePolicy::kLpm || applied == SchedulePolicy::kDfsWeight;
  // A batch that will carry the running decodes is as long as every one of their steps waits:
  // it holds mixed_chunk_size tokens, the decodes counted (as SGLang's chunked prefill counts
  // them when mixing), and at least a quarter of that for the prefill so new requests go on.
  const bool mixing = options_.enable_mixed_chunk && running_bs > 0;
  const int64_t mixed_prefill =
      std::max(options_.mixed_chunk_size - running_bs, (options_.mixed_chunk_size + 3) / 4);
  const int64_t input_budget =
      mixing ? std::min(options_.max_prefill_tokens, mixed_prefill) : options_.max_prefill_tokens;
  const int64_t chunk_budget = mixing && options_.chunked_prefill_size > 0
                                   ? std::min(options_.chunked_prefill_size, mixed_prefill)
                                   : options_.chunked_prefill_size;
  PrefillAdder adder([this] { return allocator_.available() + tree_.evictable_size(); },
                     reserved_decode_tokens(), input_budget, chunk_budget,
                     options_.max_running_requests - running_bs,
                     running_bs == 0 && chunked_req_ == nullptr, options_.max_scoring_tokens,
                     std::max(options_.chunked_prefill_size, options_.max_prefill_tokens));
  if (chunked_req_ != nullptr) {
    init_next_round_input(*chunked_req_);
    adder.add_chunked_req(*chunked_req_);
  }
  std::vector<Req*> admitted_this_round;
  for (Req* req : waiting_) {
    init_next_round_input(*req);
    if (waits_for_in_batch_prefix(*req, admitted_this_round, in_batch_prefix_caching)) {
      req->lock.reset();  // a request admitted this round caches its prefix: wait one round
      continue;
    }
    const AddResult result = adder.add_one_req(*req, [](Req&) {});
    const bool admitted = !adder.can_run_list().empty() && adder.can_run_list().back() == req;
    if (!admitted) req->lock.reset();
    if (admitted) admitted_this_round.push_back(req);
    if (result != AddResult::kContinue) break;
  }
  // Waiting requests not admitted dropped their locks above; the loop may have stopped early.
  for (Req* req : waiting_) {
    if (std::find(admitted_this_round.begin(), admitted_this_round.end(), req) ==
        admitted_this_round.end()) {
      req->lock.reset();
    }
  }
  if (adder.can_run_list().empty()) return std::nullopt;

  ScheduleBatch batch;
  batch.mode = ForwardMode::kExtend;
  batch.pooling = options_.pooler.type;
  Req* resumed = chunked_req_;
  chunked_req_ = nullptr;
  for (Req* req : adder.can_run_list()) {
    BatchEntry entry;
    if (!prepare_extend_entry(*req, &entry, &batch.out_cache_loc)) {
      // Out of KV after all (budgets are estimates): back to waiting, nothing held (its table
      // row too: release() reads a row as a request that holds KV).
      if (req != resumed) {
        req->lock.reset();
        req_to_token_.free(req->req_pool_idx);
        req->req_pool_idx = -1;
        continue;  // stays in waiting_
      }
      chunked_req_ = resumed;  // retry the chunk next round
      continue;
    }
    if (req != resumed) std::erase(waiting_, req);
    if (!req->first_schedule_time) {
      req->first_schedule_time = Clock::now();
      req->cached_tokens = static_cast<int32_t>(req->prefix_indices.size());
      totals_.prompt_tokens_total += req->prompt_len();
      totals_.cached_prompt_tokens_total += req->cached_tokens;
    }
    if (req->is_chunked) {
      // One chunked request at a time: a resumed chunk that failed to allocate keeps its place
      // (the budget admits nothing after it that would chunk; overwriting it would strand it).
      SGL_CHECK(chunked_req_ == nullptr);
      chunked_req_ = req;
    } else if (!is_embedding()) {  // an embedding request ends when this batch's result comes
      running_.push_back(req);
    }
    batch.entries.push_back(std::move(entry));
  }
  if (batch.entries.empty()) return std::nullopt;

  // MIXED: the running decodes ride along with the prefill chunk.
  if (mixing) {
    std::vector<Req*> decoders(running_.begin(), running_.begin() + running_bs);
    std::erase_if(decoders,
                  [](const Req* r) { return r->scheduled_samples >= r->request.max_new_tokens; });
    if (!decoders.empty() &&
        allocator_.available() + tree_.evictable_size() >= static_cast<int64_t>(decoders.size())) {
      for (Req* req : decoders) {
        add_decode_entry(*req, batch);
        ++totals_.computed_tokens_total;
      }
      batch.mode = ForwardMode::kMixed;
    }
  }
  return batch;
}

std::optional<ScheduleBatch> Scheduler::get_decode_batch(bool* need_drain) {
  const auto decodable = [](const Req* r) { return r->decodes_more(); };
  int64_t needed = std::count_if(running_.begin(), running_.end(), decodable);
  if (needed == 0) return std::nullopt;
  if (allocator_.available() + tree_.evictable_size() < needed) {
    if (in_flight_batches() > 0) {
      *need_drain = true;
      return std::nullopt;
    }
    retract_for_decode(needed);
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
  new_token_ratio_ =
      std::max(new_token_ratio_ - options_.new_token_ratio_decay(), options_.min_new_token_ratio());
  return batch;
}

void Scheduler::retract_for_decode(int64_t needed) {
  // Retract the requests with the fewest output tokens (then the longest prompts) first.
  std::vector<Req*> order = running_;
  std::stable_sort(order.begin(), order.end(), [](const Req* a, const Req* b) {
    if (a->output_ids.size() != b->output_ids.size())
      return a->output_ids.size() > b->output_ids.size();
    return a->prompt_len() < b->prompt_len();
  });
  while (!order.empty() && allocator_.available() + tree_.evictable_size() < needed) {
    Req* req = order.back();
    order.pop_back();
    std::erase(running_, req);
    --needed;
    release(*req);  // KV back to the cache/allocator; the request itself lives on
    req->prefix_indices.clear();
    req->fill_ids.clear();
    req->is_chunked = false;
    req->prefill_cached = false;
    req->scheduled_samples = static_cast<int32_t>(req->output_ids.size());
    ++req->retract_count;
    ++totals_.num_retracted_total;
    waiting_.push_front(req);
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

void Scheduler::process_batch_result(const ScheduleBatch& batch,
                                     const sampling::SampleOutput& output,
                                     std::span<const sampling::PromptLogprobs> prompt_logprobs) {
  SGL_CHECK_EQ(batch.id, last_processed_batch_id_ + 1) << "batch results out of order";
  size_t rows = 0;
  for (const BatchEntry& e : batch.entries) rows += static_cast<size_t>(e.sample_rows());
  SGL_CHECK_EQ(output.next_token_ids.size(), rows);
  SGL_CHECK(prompt_logprobs.empty() || prompt_logprobs.size() == batch.entries.size());
  last_processed_batch_id_ = batch.id;
  size_t row = 0;  // the entry's first result row
  for (size_t i = 0; i < batch.entries.size(); row += batch.entries[i].sample_rows(), ++i) {
    const BatchEntry& entry = batch.entries[i];
    Req& req = *entry.req;
    if (req.finished) continue;  // a token past the finish
    if (!entry.logprob_targets.empty() && !prompt_logprobs.empty()) {
      req.input_logprobs.append(prompt_logprobs[i]);
    }
    if (!entry.samples) continue;  // a non-final prefill chunk
    ReqUpdate update;
    if (req.wants_input_logprobs()) {  // the prefill is complete: deliver them once
      req.input_logprobs_sent = true;
      update.input_logprobs = std::move(req.input_logprobs);
      req.input_logprobs = {};
    }
    if (req.request.max_new_tokens == 0) {  // prompt scoring only: no token
      emit(req, std::move(update));
      finish(req, {FinishReason::kLength, -1, ""});
      continue;
    }
    // A verify entry gains its accepted drafts and the token sampled after them: the result
    // rows of the root and its accepted path's nodes.
    const std::vector<int32_t> kept =
        entry.draft_ids.empty()
            ? std::vector<int32_t>{0}
            : accept_drafts(req, entry,
                            std::span(output.next_token_ids).subspan(row, entry.sample_rows()));
    if (draft_policy_ != nullptr && !entry.draft_ids.empty()) {
      draft_policy_->record_acceptance(static_cast<int32_t>(entry.draft_ids.size()),
                                       static_cast<int32_t>(kept.size()) - 1);
    }
    std::optional<FinishState> stop;
    size_t taken = 0;  // the kept tokens the request took (it may stop among them)
    for (size_t k = 0; k < kept.size() && !stop; ++k) {
      const size_t r = row + static_cast<size_t>(kept[k]);
      const int32_t token = output.next_token_ids[r];
      if (req.grammar && !req.grammar->accept_token(token)) {
        // The mask allows only what the matcher accepts; this means the grammar left no token
        // (the vocabulary cannot spell what it requires next).
        stop = FinishState{
            FinishReason::kAbort, -1,
            "the grammar allows no token here (token " + std::to_string(token) + " was sampled)"};
        break;
      }
      req.output_ids.push_back(token);
      ++taken;
      ++totals_.generated_tokens_total;
      update.new_token_ids.push_back(token);
      if (req.request.return_logprob && !output.next_token_logprobs.empty()) {
        req.output_logprobs.push_back(output.next_token_logprobs[r]);
        update.new_logprobs.push_back(output.next_token_logprobs[r]);
      }
      if (req.request.top_logprobs_num > 0 && !output.top_logprobs.empty()) {
        req.output_top_logprobs.push_back(output.top_logprobs[r]);
        update.new_top_logprobs.push_back(output.top_logprobs[r]);
      }
      if (req.wants_token_ids_logprobs() && !output.token_ids_logprobs.empty()) {
        req.output_token_ids_logprobs.push_back(output.token_ids_logprobs[r]);
        update.new_token_ids_logprobs.push_back(output.token_ids_logprobs[r]);
      }
      stop = stop_condition(req, token);
    }
    if (!entry.draft_ids.empty()) {
      // The accept length counts the drafts the output kept: none past its stop (SGLang cuts
      // its accept index there too).
      ++totals_.spec_verify_steps;
      totals_.spec_draft_tokens += static_cast<int64_t>(entry.draft_ids.size());
      totals_.spec_accepted_tokens += std::max<int64_t>(static_cast<int64_t>(taken) - 1, 0);
    }
    emit(req, std::move(update));
    if (stop) finish(req, std::move(*stop));
  }
  fill_ready_masks();
  release_ready();
}

void Scheduler::process_embedding_result(const ScheduleBatch& batch,
                                         std::span<const float> embeddings) {
  SGL_CHECK_EQ(batch.id, last_processed_batch_id_ + 1) << "batch results out of order";
  SGL_CHECK(batch.pooling != PoolingType::kNone && batch.pooling == options_.pooler.type)
      << "an embedding result for a batch that does not pool";
  const size_t n = batch.entries.size();
  SGL_CHECK(n > 0 && !embeddings.empty() && embeddings.size() % n == 0)
      << embeddings.size() << " pooled values for " << n << " requests";
  const size_t hidden = embeddings.size() / n;
  last_processed_batch_id_ = batch.id;
  for (size_t i = 0; i < n; ++i) {
    const BatchEntry& entry = batch.entries[i];
    Req& req = *entry.req;
    if (req.finished) continue;  // aborted while the batch ran
    req.embedding.add_chunk(batch.pooling, embeddings.subspan(i * hidden, hidden),
                            entry.extend_len);
    if (!entry.samples) continue;  // more of the prompt follows in the next chunk
    SGL_CHECK(batch.pooling != PoolingType::kMean || req.embedding.rows() == req.prompt_len())
        << "mean pooling over " << req.embedding.rows() << " of " << req.prompt_len()
        << " prompt tokens";
    ReqUpdate update;
    update.embedding = req.embedding.finish(options_.pooler);
    emit(req, std::move(update));
    finish(req, {FinishReason::kLength, -1, ""});
  }
  release_ready();
}

std::optional<FinishState> Scheduler::stop_condition(const Req& req, int32_t token) const {
  const GenerateRequest& r = req.request;
  if ((!r.ignore_eos && contains(eos_token_ids_, token)) || contains(r.stop_token_ids, token)) {
    return FinishState{FinishReason::kStop, token, ""};
  }
  // A grammar that accepted a stop token ends the request even with ignore_eos (SGLang's).
  if (req.grammar && req.grammar->is_terminated())
    return FinishState{FinishReason::kStop, token, ""};
  if (static_cast<int32_t>(req.output_ids.size()) >= r.max_new_tokens ||
      req.prompt_len() + static_cast<int32_t>(req.output_ids.size()) >= max_context_len_) {
    return FinishState{FinishReason::kLength, -1, ""};
  }
  return std::nullopt;
}

void Scheduler::finish(Req& req, FinishState state) {
  req.finished = std::move(state);
  std::erase(waiting_, &req);
  std::erase(running_, &req);
  if (chunked_req_ == &req) chunked_req_ = nullptr;
  ++totals_.finished_requests_total;
  if (!updates_.empty() && updates_.back().rid == req.rid && !updates_.back().finished) {
    // The token that ended the request and the finish travel in one update, so a consumer knows
    // which token it was when it sees it (the server leaves a stop token's text out).
    updates_.back().finished = req.finished;
  } else {
    ReqUpdate update;
    update.finished = req.finished;
    emit(req, std::move(update));
  }
  to_release_.push_back(&req);
}

void Scheduler::release(Req& req) {
  if (req.req_pool_idx >= 0) {
    const std::span<const int32_t> row = req_to_token_.row(req.req_pool_idx);
    const std::vector<int32_t> tokens = req.all_token_ids();
    // An aborted request may hold slots for positions whose tokens never came back.
    const auto known = std::min(static_cast<int32_t>(std::min<size_t>(tokens.size(), req.kv_len)),
                                draft_cacheable_len(req));
    SGL_CHECK_GE(known, req.borrowed_len);
    tree_.cache_finished_req(std::span(tokens.data(), known), row.subspan(0, known),
                             std::move(req.lock), allocator_);
    allocator_.free(row.subspan(known, req.kv_len - known));
    req_to_token_.free(req.req_pool_idx);
    req.req_pool_idx = -1;
  }
  req.lock.reset();
  req.kv_len = 0;
  req.borrowed_len = 0;
}

void Scheduler::release_ready() {
  std::erase_if(to_release_, [this](Req* req) {
    if (req->last_batch_id > last_processed_batch_id_) return false;  // still read in flight
    release(*req);
    reqs_.erase(req->rid);
    return true;
  });
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
