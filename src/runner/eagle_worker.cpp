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
      req_to_token_(req_to_token),
      topk_(draft.topk()),
      builder_(draft.target().allocator(), draft.target().options().max_num_tokens,
               draft.target().options().max_batch_size, req_to_token),
      hidden_size_(draft.config().llama.hidden_size) {
  ModelRunner& target = draft.target();
  Allocator& allocator = target.allocator();
  const DType dtype = target.compute_dtype();
  const int64_t max_tokens = target.options().max_num_tokens;
  const int64_t max_bs = target.options().max_batch_size;
  hidden_state_ = Buffer(allocator, dtype, {max_reqs, hidden_size_});
  kernels::zero(hidden_state_, target.stream());
  extend_hidden_ = Buffer(allocator, dtype, {max_tokens, draft.config().target_hidden_width()});
  gather_rows_ = Buffer(allocator, DType::kI32, {max_tokens});
  scatter_rows_ = Buffer(allocator, DType::kI32, {max_bs});
  if (topk_ == 1) {
    first_draft_ = Buffer(allocator, DType::kI32, {max_reqs, 1});
    kernels::zero(first_draft_, target.stream());  // a valid id for rows never extended
    greedy_ids_ = Buffer(allocator, DType::kI32, {max_bs, 1});
    chain_ = std::make_unique<EagleChain>(draft, req_to_token, first_draft_, hidden_state_,
                                          static_cast<int32_t>(max_bs));
    next_drafts_.resize(static_cast<size_t>(max_reqs));
  }
  if (topk_ > 1) {
    next_top_.resize(static_cast<size_t>(max_reqs));
    // One top k for the draft extends' rows and the tree steps' branches (EagleTree's groups
    // of max_batch_size / topk requests, at least one).
    top_k_ = std::make_unique<DraftTopK>(target, topk_, std::max<int64_t>(max_bs, topk_));
    tree_ = std::make_unique<EagleTree>(draft, req_to_token, hidden_state_.tensor(), *top_k_);
  }
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

void EagleWorker::extend_kept(std::span<const BatchRequest> requests, const Tensor& hidden_in) {
  ModelRunner& target = draft_.target();
  const ForwardBatch fb =
      builder_.build(ForwardMode::kExtend, LogitsMode::kLastPerRequest, requests, target.stream());
  const model::DraftOutput out = draft_.forward(fb, hidden_in);
  // Each request's state: its output hidden row, then what its next drafts start from.
  std::vector<int32_t> rows(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) rows[i] = requests[i].req_pool_idx;
  kernels::scatter_rows(out.hidden_states, upload(rows, scatter_rows_), hidden_state_,
                        target.stream());
  if (topk_ > 1) {  // a tree starts from the distribution's top k
    std::vector<std::vector<speculative::TokenLogprob>> top =
        top_k_->host(out.logits, draft_.draft_to_target());
    for (size_t i = 0; i < requests.size(); ++i) {
      next_top_[static_cast<size_t>(rows[i])] = std::move(top[i]);
    }
    return;
  }
  // A chain drafts greedily (verification keeps the target's distribution whatever the drafts
  // are); the ids stay on the device, where the chain's steps read them.
  const auto n = static_cast<int64_t>(requests.size());
  const Tensor ids = greedy_ids_.tensor().slice_rows(0, n);
  draft_.greedy_ids(out.logits, ids);
  kernels::scatter_rows(ids, scatter_rows_.tensor().slice_rows(0, n), first_draft_,
                        target.stream());
}

std::vector<speculative::DraftTree> EagleWorker::draft(const ExecBatch& batch) {
  if (topk_ > 1) return draft_tree(batch);
  std::vector<std::vector<int32_t>> chains = draft_chain(batch);
  std::vector<speculative::DraftTree> out(chains.size());
  for (size_t i = 0; i < chains.size(); ++i) out[i].tokens = std::move(chains[i]);
  return out;
}

std::vector<speculative::DraftTree> EagleWorker::draft_tree(const ExecBatch& batch) {
  std::vector<TreeRequest> requests;
  std::vector<size_t> of;  // each tree's request in the batch
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    const ExecRequest& r = batch.requests[i];
    if (r.sample_rows <= 1) continue;
    SGL_CHECK_EQ(r.extend_len, r.sample_rows) << "a verify entry is its last token and drafts";
    const auto& first = next_top_[static_cast<size_t>(r.req_pool_idx)];
    SGL_CHECK_EQ(static_cast<int32_t>(first.size()), topk_)
        << "no draft state for request row " << r.req_pool_idx;
    requests.push_back({r.req_pool_idx, r.prefix_len,
                        req_to_token_.row(r.req_pool_idx).first(static_cast<size_t>(r.prefix_len)),
                        first, r.sample_rows - 1});
    of.push_back(i);
  }
  std::vector<speculative::DraftTree> trees(batch.requests.size());
  std::vector<speculative::DraftTree> drafted = tree_->draft(requests);
  for (size_t j = 0; j < of.size(); ++j) trees[of[j]] = std::move(drafted[j]);
  return trees;
}

void EagleWorker::take_pending_drafts() {
  for (PendingDrafts& p : chain_->take_drafts()) {
    next_drafts_[static_cast<size_t>(p.req_pool_idx)] = {p.prefix_len, std::move(p.drafts)};
  }
}

std::vector<std::vector<int32_t>> EagleWorker::draft_chain(const ExecBatch& batch) {
  std::vector<std::vector<int32_t>> drafts(batch.requests.size());
  // The usual step: every verify's drafts were left by the last verify's chain. They stay on the
  // device (references), so nothing waits for that chain here.
  referenced_.clear();
  bool all_pending = true;
  for (size_t i = 0; i < batch.requests.size() && all_pending; ++i) {
    const ExecRequest& r = batch.requests[i];
    if (r.sample_rows <= 1) continue;
    const int32_t b = chain_->pending_row(r.req_pool_idx, r.prefix_len);
    all_pending = b >= 0;
    referenced_.emplace_back(i, b);
  }
  if (all_pending && !referenced_.empty()) {
    for (const auto& [i, b] : referenced_) {
      for (int32_t k = 0; k < batch.requests[i].sample_rows - 1; ++k) {
        drafts[i].push_back(sampled_id_ref(static_cast<int32_t>(chain_->draft_id_index(b, k))));
      }
    }
    return drafts;
  }
  referenced_.clear();
  // Drafts the last verify left (for the positions each request has now, if it still does).
  take_pending_drafts();
  std::vector<ChainRequest> chain;
  std::vector<size_t> who;
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    const ExecRequest& r = batch.requests[i];
    if (r.sample_rows <= 1) continue;
    SGL_CHECK_EQ(r.extend_len, r.sample_rows) << "a verify entry is its last token and drafts";
    const int32_t n = r.sample_rows - 1;
    NextDrafts& next = next_drafts_[static_cast<size_t>(r.req_pool_idx)];
    if (next.prefix_len == r.prefix_len && static_cast<int32_t>(next.drafts.size()) >= n) {
      drafts[i].assign(next.drafts.begin(), next.drafts.begin() + n);
    } else {
      // The table row holds the verify's slots: step j stores at position prefix_len + j - 1's.
      chain.push_back(
          {r.req_pool_idx, r.prefix_len, n,
           req_to_token_.row(r.req_pool_idx).first(static_cast<size_t>(r.prefix_len + n - 1))});
      who.push_back(i);
    }
    next.prefix_len = -1;  // used
  }
  if (chain.empty()) return drafts;
  std::vector<std::vector<int32_t>> ids = chain_->draft(chain);
  for (size_t c = 0; c < who.size(); ++c) drafts[who[c]] = std::move(ids[c]);
  return drafts;
}

Tensor EagleWorker::draft_id_table() const {
  return referenced_.empty() ? Tensor() : chain_->draft_ids();
}

bool EagleWorker::resolve_drafts(const ExecBatch& batch,
                                 std::vector<speculative::DraftTree>& drafts) {
  if (referenced_.empty()) return false;
  take_pending_drafts();  // every request's, this batch's and the others' (for their next verify)
  for (const auto& [i, b] : referenced_) {
    NextDrafts& next = next_drafts_[static_cast<size_t>(batch.requests[i].req_pool_idx)];
    std::vector<int32_t>& tokens = drafts[i].tokens;
    std::copy_n(next.drafts.begin(), tokens.size(), tokens.begin());
    next.prefix_len = -1;  // used
  }
  referenced_.clear();
  return true;
}

const Tensor& EagleWorker::draft_input(const model::ModelOutput& target) const {
  const bool eagle3 = draft_.config().kind == model::DraftKind::kEagle3;
  return eagle3 ? target.aux_hidden_states : target.hidden_states;
}

bool EagleWorker::queue_extend_and_draft(const ExecBatch& batch, const model::ModelOutput& target,
                                         const VerifyIds& ids) {
  if (chain_ == nullptr || batch.requests.empty()) return false;
  const int32_t tokens = batch.requests.front().sample_rows;
  std::vector<VerifiedRequest> verified;
  for (const ExecRequest& r : batch.requests) {
    // Every request a chain verify of `tokens` tokens, with room for the next chain's steps.
    if (r.sample_rows != tokens || r.extend_len != tokens || tokens < 2 ||
        r.prefix_len + tokens + draft_.num_steps() > req_to_token_.max_context_len()) {
      return false;
    }
    verified.push_back(
        {r.req_pool_idx, r.prefix_len,
         req_to_token_.row(r.req_pool_idx).first(static_cast<size_t>(r.prefix_len + tokens))});
  }
  VerifyIds where = ids;
  if (where.sampled.device() != draft_.target().options().device) {
    // Sampled on the host beside a GPU draft (a sampling the device sampler does not take).
    where.sampled =
        upload(std::span(where.sampled.data<int32_t>(), static_cast<size_t>(where.sampled.numel())),
               gather_rows_);
  }
  const Tensor& hidden = draft_input(target);
  SGL_CHECK(hidden.defined() && hidden.size(0) == where.sampled.numel())
      << "the draft extend needs every token's target hidden states";
  chain_->extend_and_draft(verified, tokens, hidden, where);
  return true;
}

void EagleWorker::extend(const ExecBatch& batch, std::span<const int32_t> input_ids,
                         const model::ModelOutput& target, std::span<const int32_t> sampled,
                         const std::vector<speculative::DraftTree>& drafts, bool queued) {
  if (queued) {  // the chain's drafts start where the host now sees each accepted path end
    std::vector<int32_t> accepted;
    size_t row = 0;
    for (size_t i = 0; i < batch.requests.size(); ++i) {
      const auto n = static_cast<size_t>(batch.requests[i].sample_rows);
      accepted.push_back(speculative::accepted_drafts(drafts[i].tokens, sampled.subspan(row, n)));
      row += n;
    }
    chain_->set_accepted(accepted);
    return;
  }
  const Tensor& hidden = draft_input(target);
  SGL_CHECK(hidden.defined() && hidden.size(0) == static_cast<int64_t>(input_ids.size()))
      << "the draft extend needs every token's target hidden states";
  // Otherwise the kept positions only, and the next drafts come from the draft state: drafts a
  // verify left for these rows (another request's, if a row was freed and taken) no longer apply.
  if (chain_ != nullptr) {
    take_pending_drafts();
    for (const ExecRequest& r : batch.requests) {
      next_drafts_[static_cast<size_t>(r.req_pool_idx)].prefix_len = -1;
    }
  }
  // Each request's kept positions: ids shifted by one (each position reads the token after it),
  // their slots, and the target hidden rows at them.
  std::vector<BatchRequest> requests;
  std::vector<int32_t> ids, rows;
  ids.reserve(input_ids.size());
  rows.reserve(input_ids.size());
  std::vector<std::pair<size_t, int32_t>> spans;  // (first id, count) per request
  // A tree's accepted path: its kept nodes' slots and the whole KV list (per request; empty for
  // the others, which read their table rows).
  std::vector<std::vector<int32_t>> path_slots(batch.requests.size()),
      path_kv(batch.requests.size());
  size_t offset = 0, row = 0;  // the request's first token and first sampled row
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    const ExecRequest& r = batch.requests[i];
    const size_t first = offset;
    offset += static_cast<size_t>(r.extend_len);
    const size_t first_row = row;
    row += static_cast<size_t>(r.sample_rows);
    int32_t kept = r.extend_len;
    int32_t next = -1;  // the token after the last kept position
    if (r.sample_rows > 1 && !drafts[i].parents.empty()) {
      // A tree: the root and the accepted path's nodes, in path order.
      const speculative::DraftTree& tree = drafts[i];
      std::vector<int32_t> nodes = {0};
      for (int32_t n : speculative::accepted_path(
               tree.tokens, tree.parents, sampled.subspan(first_row, tree.tokens.size() + 1))) {
        nodes.push_back(n);
      }
      const size_t id_begin = ids.size();
      for (size_t t = 1; t < nodes.size(); ++t) {
        ids.push_back(tree.tokens[static_cast<size_t>(nodes[t] - 1)]);
      }
      ids.push_back(sampled[first_row + static_cast<size_t>(nodes.back())]);
      const std::span<const int32_t> table_row = req_to_token_.row(r.req_pool_idx);
      path_kv[i].assign(table_row.begin(), table_row.begin() + r.prefix_len);
      for (int32_t n : nodes) {
        rows.push_back(static_cast<int32_t>(first) + n);
        path_slots[i].push_back(batch.out_cache_loc[first + static_cast<size_t>(n)]);
        path_kv[i].push_back(path_slots[i].back());
      }
      spans.emplace_back(id_begin, static_cast<int32_t>(nodes.size()));
      requests.push_back({r.req_pool_idx, r.prefix_len, {}, path_slots[i], {}, {}, path_kv[i]});
      continue;
    }
    if (r.sample_rows > 1) {
      const int32_t accepted = speculative::accepted_drafts(
          drafts[i].tokens, sampled.subspan(first_row, drafts[i].tokens.size() + 1));
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
  // The target rows, gathered unless the pass kept every token in order.
  Tensor hidden_in = hidden;
  bool every_row = rows.size() == input_ids.size();
  for (size_t t = 0; t < rows.size() && every_row; ++t) {
    every_row = rows[t] == static_cast<int32_t>(t);
  }
  if (!every_row) {
    hidden_in = extend_hidden_.tensor().slice_rows(0, static_cast<int64_t>(rows.size()));
    SGL_CHECK(hidden.dtype() == hidden_in.dtype() && hidden.size(1) == hidden_in.size(1))
        << "target hidden states " << hidden.shape_string() << " for the draft's "
        << hidden_in.shape_string();
    kernels::embedding(upload(rows, gather_rows_), hidden, hidden_in, draft_.target().stream());
  }
  extend_kept(requests, hidden_in);
}

}  // namespace sgl::runner
