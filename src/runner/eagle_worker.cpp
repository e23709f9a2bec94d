// EagleWorker.
#include "runner/eagle_worker.h"

#include <algorithm>

#include "core/check.h"
#include "kernels/copy.h"
#include "kernels/embedding.h"
#include "kernels/gather.h"
#include "speculative/draft_acceptance.h"

namespace sgl::runner {

EagleWorker::EagleWorker(EagleDraftRunner& draft, const cache::ReqToTokenTable& req_to_token,
                         int32_t max_reqs)
    : draft_(draft),
      builder_(draft.target().allocator(), draft.target().options().max_num_tokens,
               draft.target().options().max_batch_size, req_to_token),
      hidden_size_(draft.config().llama.hidden_size),
      next_draft_(static_cast<size_t>(max_reqs), 0) {
  greedy_prototype_.temperature = 0.f;  // drafts are each row's argmax
  greedy_prototype_.seed = 0;
  ModelRunner& target = draft.target();
  Allocator& allocator = target.allocator();
  const DType dtype = target.compute_dtype();
  const int64_t max_tokens = target.options().max_num_tokens;
  const int64_t max_bs = target.options().max_batch_size;
  hidden_state_ = Buffer(allocator, dtype, {max_reqs, hidden_size_});
  kernels::zero(hidden_state_, target.stream());
  step_hidden_ = Buffer(allocator, dtype, {max_bs, hidden_size_});
  extend_hidden_ = Buffer(allocator, dtype, {max_tokens, draft.config().target_hidden_width()});
  gather_rows_ = Buffer(allocator, DType::kI32, {max_tokens});
  scatter_rows_ = Buffer(allocator, DType::kI32, {max_bs});
}

Tensor EagleWorker::upload(std::span<const int32_t> values, const Buffer& buffer) {
  const auto n = static_cast<int64_t>(values.size());
  SGL_CHECK_LE(n, buffer.tensor().numel());
  const Tensor out = buffer.tensor().slice_rows(0, n);
  // NOTE: a pageable host source: the copy has read it when this returns.
  kernels::copy(Tensor(const_cast<int32_t*>(values.data()), DType::kI32, {n}), out,
                draft_.target().stream());
  return out;
}

std::vector<int32_t> EagleWorker::run(ForwardMode mode, std::span<const BatchRequest> requests,
                                      const Tensor& hidden_in) {
  ModelRunner& target = draft_.target();
  const ForwardBatch fb =
      builder_.build(mode, LogitsMode::kLastPerRequest, requests, target.stream());
  const model::DraftOutput out = draft_.forward(fb, hidden_in);
  // Each request's state: its output hidden row, and the argmax of its logits (a chain drafts
  // greedily; verification keeps the target's distribution whatever the drafts are).
  std::vector<int32_t> rows(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) rows[i] = requests[i].req_pool_idx;
  kernels::scatter_rows(out.hidden_states, upload(rows, scatter_rows_), hidden_state_,
                        target.stream());
  greedy_.params.assign(requests.size(), greedy_prototype_);
  greedy_.steps.assign(requests.size(), 0);
  greedy_.top_logprobs_num.assign(requests.size(), 0);
  std::vector<int32_t> ids = target.sample_now(out.logits, greedy_).next_token_ids;
  const std::span<const int32_t> to_target = draft_.draft_to_target();
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!to_target.empty()) ids[i] = to_target[static_cast<size_t>(ids[i])];
    next_draft_[static_cast<size_t>(rows[i])] = ids[i];
  }
  return ids;
}

std::vector<std::vector<int32_t>> EagleWorker::draft(const ExecBatch& batch) {
  const size_t bs = batch.requests.size();
  std::vector<std::vector<int32_t>> drafts(bs);
  std::vector<size_t> offset(bs);  // each request's first token in the pass
  int32_t max_drafts = 0;
  for (size_t i = 0, o = 0; i < bs; o += static_cast<size_t>(batch.requests[i].extend_len), ++i) {
    const ExecRequest& r = batch.requests[i];
    offset[i] = o;
    if (r.sample_rows <= 1) continue;
    SGL_CHECK_EQ(r.extend_len, r.sample_rows) << "a verify entry is its last token and drafts";
    drafts[i].assign(static_cast<size_t>(r.sample_rows - 1), 0);
    drafts[i][0] = next_draft_[static_cast<size_t>(r.req_pool_idx)];
    max_drafts = std::max(max_drafts, r.sample_rows - 1);
  }
  // Step j drafts token j + 1 of each request that wants it: draft j read at position
  // prefix_len + j - 1 (after the last token at prefix_len), its K/V at that position's slot.
  std::vector<BatchRequest> step;
  std::vector<int32_t> rows;
  for (int32_t j = 1; j < max_drafts; ++j) {
    step.clear();
    rows.clear();
    std::vector<size_t> who;
    for (size_t i = 0; i < bs; ++i) {
      const ExecRequest& r = batch.requests[i];
      if (static_cast<int32_t>(drafts[i].size()) <= j) continue;
      const size_t at = offset[i] + static_cast<size_t>(j - 1);
      step.push_back({r.req_pool_idx, r.prefix_len + j - 1,
                      std::span<const int32_t>(&drafts[i][static_cast<size_t>(j - 1)], 1),
                      std::span<const int32_t>(&batch.out_cache_loc[at], 1)});
      rows.push_back(r.req_pool_idx);
      who.push_back(i);
    }
    const Tensor hidden_in = step_hidden_.tensor().slice_rows(0, static_cast<int64_t>(rows.size()));
    kernels::embedding(upload(rows, gather_rows_), hidden_state_, hidden_in,
                       draft_.target().stream());
    const std::vector<int32_t> ids = run(ForwardMode::kDecode, step, hidden_in);
    for (size_t s = 0; s < who.size(); ++s) drafts[who[s]][static_cast<size_t>(j)] = ids[s];
  }
  return drafts;
}

void EagleWorker::extend(const ExecBatch& batch, std::span<const int32_t> input_ids,
                         const model::ModelOutput& target, std::span<const int32_t> sampled,
                         const std::vector<std::vector<int32_t>>& drafts) {
  const bool eagle3 = draft_.config().kind == model::DraftKind::kEagle3;
  const Tensor& hidden = eagle3 ? target.aux_hidden_states : target.hidden_states;
  SGL_CHECK(hidden.defined() && hidden.size(0) == static_cast<int64_t>(input_ids.size()))
      << "the draft extend needs every token's target hidden states";
  // Each request's kept positions: ids shifted by one (each position reads the token after it),
  // their slots, and the target hidden rows at them.
  std::vector<BatchRequest> requests;
  std::vector<int32_t> ids, rows;
  ids.reserve(input_ids.size());
  rows.reserve(input_ids.size());
  std::vector<std::pair<size_t, int32_t>> spans;  // (first id, count) per request
  size_t offset = 0, row = 0;                     // the request's first token and first sampled row
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    const ExecRequest& r = batch.requests[i];
    const size_t first = offset;
    offset += static_cast<size_t>(r.extend_len);
    const size_t first_row = row;
    row += static_cast<size_t>(r.sample_rows);
    int32_t kept = r.extend_len;
    int32_t next = -1;  // the token after the last kept position
    if (r.sample_rows > 1) {
      const int32_t accepted =
          speculative::accepted_drafts(drafts[i], sampled.subspan(first_row, drafts[i].size() + 1));
      kept = 1 + accepted;
      next = sampled[first_row + static_cast<size_t>(accepted)];
    } else if (r.samples) {
      next = sampled[first_row];
    } else {
      next = r.next_input_id;
    }
    if (next < 0) --kept;  // nothing known after the chunk: its last position waits
    if (kept <= 0) continue;
    const size_t id_begin = ids.size();
    ids.insert(ids.end(), input_ids.begin() + static_cast<std::ptrdiff_t>(first + 1),
               input_ids.begin() + static_cast<std::ptrdiff_t>(first + static_cast<size_t>(kept)));
    ids.push_back(next >= 0 ? next : input_ids[first + static_cast<size_t>(kept)]);
    for (int32_t t = 0; t < kept; ++t) rows.push_back(static_cast<int32_t>(first) + t);
    spans.emplace_back(id_begin, kept);
    requests.push_back(
        {r.req_pool_idx,
         r.prefix_len,
         {},
         std::span<const int32_t>(&batch.out_cache_loc[first], static_cast<size_t>(kept))});
  }
  if (requests.empty()) return;
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].input_ids =
        std::span<const int32_t>(ids.data() + spans[i].first, static_cast<size_t>(spans[i].second));
  }
  // The target rows, gathered unless the pass kept every token.
  Tensor hidden_in = hidden;
  if (rows.size() != input_ids.size()) {
    hidden_in = extend_hidden_.tensor().slice_rows(0, static_cast<int64_t>(rows.size()));
    SGL_CHECK(hidden.dtype() == hidden_in.dtype() && hidden.size(1) == hidden_in.size(1))
        << "target hidden states " << hidden.shape_string() << " for the draft's "
        << hidden_in.shape_string();
    kernels::embedding(upload(rows, gather_rows_), hidden, hidden_in, draft_.target().stream());
  }
  run(ForwardMode::kExtend, requests, hidden_in);
}

}  // namespace sgl::runner
