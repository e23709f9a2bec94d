// Scheduler, results (SGLang's scheduler output processor): sampled tokens and embeddings
// applied to their requests, stop conditions, finishing, and the release of a finished
// request's KV into the radix cache once no batch in flight reads it.
#include <algorithm>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "core/check.h"
#include "scheduler/scheduler.h"

namespace sgl::scheduler {
namespace {

bool contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

void Scheduler::process_batch_result(const ScheduleBatch& batch,
                                     const sampling::SampleOutput& output,
                                     std::span<const sampling::PromptLogprobs> prompt_logprobs,
                                     std::span<const std::vector<float>> hidden_states,
                                     std::span<const std::vector<int32_t>> routed_experts) {
  SGL_CHECK_EQ(batch.id, last_processed_batch_id_ + 1) << "batch results out of order";
  size_t rows = 0;
  for (const BatchEntry& e : batch.entries) rows += static_cast<size_t>(e.sample_rows());
  SGL_CHECK_EQ(output.next_token_ids.size(), rows);
  SGL_CHECK(prompt_logprobs.empty() || prompt_logprobs.size() == batch.entries.size());
  SGL_CHECK(hidden_states.empty() || hidden_states.size() == batch.entries.size());
  SGL_CHECK(routed_experts.empty() || routed_experts.size() == batch.entries.size());
  last_processed_batch_id_ = batch.id;
  size_t row = 0;  // the entry's first result row
  for (size_t i = 0; i < batch.entries.size(); row += batch.entries[i].sample_rows(), ++i) {
    const BatchEntry& entry = batch.entries[i];
    Req& req = *entry.req;
    if (req.finished) continue;  // a token past the finish
    if (!entry.logprob_targets.empty() && !prompt_logprobs.empty()) {
      req.input_logprobs.append(prompt_logprobs[i]);
    }
    if (!hidden_states.empty() && !hidden_states[i].empty()) {
      req.hidden_states.keep(entry.prefix_len, entry.extend_len, hidden_states[i]);
    }
    if (!routed_experts.empty() && !routed_experts[i].empty()) {
      req.routed_experts.keep(entry.prefix_len, entry.extend_len, routed_experts[i]);
    }
    if (!entry.samples) continue;  // a non-final prefill chunk
    ReqUpdate update;
    update.new_hidden_states = std::exchange(req.hidden_states.unsent, {});
    update.new_routed_experts = std::exchange(req.routed_experts.unsent, {});
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
      const int32_t kept_drafts = std::max(static_cast<int32_t>(taken) - 1, 0);
      totals_.spec_accepted_tokens += kept_drafts;
      req.spec.record(static_cast<int32_t>(entry.draft_ids.size()), kept_drafts);
      update.spec = req.spec;  // (only when it changes: the stream keeps the latest)
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
  if (static_cast<int32_t>(req.output_ids.size()) >= r.max_new_tokens ||
      req.prompt_len() + static_cast<int32_t>(req.output_ids.size()) >= max_context_len_) {
    return FinishState{FinishReason::kLength, -1, ""};
  }
  // A grammar that accepted a stop token ends the request even with ignore_eos; the length
  // limit reached by the same token is the reason SGLang gives.
  if (req.grammar && req.grammar->is_terminated())
    return FinishState{FinishReason::kStop, token, ""};
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
  cache::CacheUnfinishedResult cached =
      tree_.cache_unfinished_req(std::span(tokens.data(), n), row.subspan(0, n),
                                 std::move(req.lock), allocator_, req.request.cache_namespace);
  req_to_token_.write(req.req_pool_idx, 0, cached.kv_slots);
  req.prefix_indices = std::move(cached.kv_slots);
  req.lock = std::move(cached.lock);
  req.borrowed_len = tree_.disabled() ? 0 : n;
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
                             std::move(req.lock), allocator_, req.request.cache_namespace);
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

}  // namespace sgl::scheduler
