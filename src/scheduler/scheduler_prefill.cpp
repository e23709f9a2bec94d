// Scheduler, admission: the waiting requests matched against the radix cache and admitted into a
// prefill (or mixed) batch as the KV cache and the token budget allow, chunking long prompts.
#include <algorithm>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "core/check.h"
#include "scheduler/prefill_adder.h"
#include "scheduler/schedule_policy.h"
#include "scheduler/scheduler.h"

namespace sgl::scheduler {
namespace {

int64_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int64_t>(i);
}

}  // namespace

size_t Scheduler::cache_key_length(const Req& req) const {
  // At least one token is computed, so there are logits to sample from; prompt logprobs need
  // logits from logprob_start_len on, so the cache may serve only the tokens before it.
  size_t key_len = req.fill_ids.size() - 1;
  if (req.wants_input_logprobs()) {
    key_len = std::min(key_len, static_cast<size_t>(req.request.logprob_start_len));
  }
  // Mean pooling reads every prompt token's hidden state: a cached prefix would have none; nor
  // may positions whose hidden states a request still has to report.
  if (options_.pooler.type == PoolingType::kMean) key_len = 0;
  if (req.request.return_hidden_states) {
    key_len = std::min(key_len, static_cast<size_t>(req.hidden_states.len));
  }
  if (req.request.return_routed_experts) {
    key_len = std::min(key_len, static_cast<size_t>(req.routed_experts.len));
  }
  return key_len;
}

bool Scheduler::waits_for_in_batch_prefix(const Req& req, std::span<Req* const> admitted,
                                          bool any_shared_prefix) const {
  // Without a radix cache nothing the admitted requests compute can serve `req`.
  if (tree_.disabled()) return false;
  const auto key_len = static_cast<int64_t>(cache_key_length(req));
  if (key_len < kInBatchPrefixThreshold ||
      static_cast<int64_t>(req.prefix_indices.size()) >= kInBatchPrefixThreshold) {
    return false;  // the cache could not serve it, or already does
  }
  return std::any_of(admitted.begin(), admitted.end(), [&](const Req* other) {
    if (other->request.cache_namespace != req.request.cache_namespace) return false;
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
  cache::MatchResult match = tree_.match_prefix(key, req.request.cache_namespace);
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

std::optional<ScheduleBatch> Scheduler::get_new_batch_prefill() {
  if (waiting_.empty() && chunked_req_ == nullptr) return std::nullopt;
  const auto running_bs = static_cast<int32_t>(running_.size());
  // Full, unless a waiting request may preempt a running one.
  const bool may_preempt = options_.priority.enabled && options_.priority.preemption;
  if (running_bs >= options_.max_running_requests && chunked_req_ == nullptr && !may_preempt) {
    return std::nullopt;
  }

  const SchedulePolicy applied =
      sort_waiting_queue(options_.policy, options_.priority, waiting_, tree_, rng_);
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
  std::vector<Req*> preempted;  // back to the queue's front once the loop is done
  // SGLang's --max-loras-per-batch: the adapters running (and the chunk's) bound the batch's.
  std::set<int32_t> batch_loras;
  const size_t max_loras = static_cast<size_t>(std::max(options_.max_loras_per_batch, 0));
  if (max_loras > 0) {
    for (const Req* req : running_) batch_loras.insert(req->request.lora_id);
    if (chunked_req_ != nullptr) batch_loras.insert(chunked_req_->request.lora_id);
  }
  for (Req* req : waiting_) {
    if (max_loras > 0 && !batch_loras.contains(req->request.lora_id) &&
        batch_loras.size() >= max_loras) {
      continue;  // its adapter would be one too many; later requests may share one running
    }
    init_next_round_input(*req);
    if (waits_for_in_batch_prefix(*req, admitted_this_round, in_batch_prefix_caching)) {
      req->lock.reset();  // a request admitted this round caches its prefix: wait one round
      continue;
    }
    const auto admitted = [&] {
      return !adder.can_run_list().empty() && adder.can_run_list().back() == req;
    };
    AddResult result = adder.add_one_req(*req, [](Req&) {});
    if (!admitted() && (result == AddResult::kNoToken || adder.out_of_running_slots())) {
      // Priority scheduling: running requests it outranks may make room (after the batches in
      // flight, which read their KV, are done).
      const std::vector<Req*> victims = preemption_victims(*req, adder);
      if (!victims.empty() && in_flight_batches() > 0) {
        drain_for_preemption_ = true;
      } else if (!victims.empty()) {
        preempt(victims, adder);
        preempted.insert(preempted.end(), victims.begin(), victims.end());
        result = adder.add_one_req(*req, [](Req&) {});
      }
    }
    if (!admitted()) req->lock.reset();
    if (admitted()) {
      admitted_this_round.push_back(req);
      if (max_loras > 0) batch_loras.insert(req->request.lora_id);
    }
    if (result != AddResult::kContinue) break;
  }
  for (auto it = preempted.rbegin(); it != preempted.rend(); ++it) waiting_.push_front(*it);
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

  // MIXED: the running decodes (those not preempted; the admitted follow them) ride along with
  // the prefill chunk.
  if (mixing) {
    std::vector<Req*> decoders(
        running_.begin(), running_.begin() + (running_bs - static_cast<int32_t>(preempted.size())));
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

}  // namespace sgl::scheduler
