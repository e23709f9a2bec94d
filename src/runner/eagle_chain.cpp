// EagleChain: static arrays, the passes' batches, eager runs and (GPU) graph replays.
#include "runner/eagle_chain.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>
#include <utility>

#include "backend/backend.h"
#include "core/check.h"
#include "core/logging.h"
#include "kernels/copy.h"
#include "kernels/embedding.h"
#include "kernels/gather.h"
#include "runner/eagle_chain_accept.h"
#ifdef SGL_WITH_CUDA
#include "backend/cuda/cuda_graph.h"
#include "runner/cuda_graph_runner.h"
#endif

namespace sgl::runner {
namespace {

// The chain's step arrays, in step_at's order.
enum StepArray : int32_t { kPositions = 0, kSlots = 1, kSeqLens = 2, kPrefixLens = 3 };
// The draft extend's arrays, in extend_at's order (kv_indices last: it is the longest).
enum ExtendArray : int32_t {
  kExtendIds = 0,
  kExtendPositions,
  kExtendSlots,
  kExtendSeqLens,
  kExtendPrefixLens,
  kExtendLens,
  kExtendQoIndptr,
  kExtendKvIndptr,
  kExtendOutRows,
  kExtendKvIndices,
};

// The dummy slot no token owns (cache/token_to_kv_pool_allocator.h): padding rows and a
// chain's steps past a request's drafts store their K/V there, as the decode graphs' padding.
constexpr int32_t kTrashSlot = 0;

}  // namespace

struct EagleChain::Graphs {
#ifdef SGL_WITH_CUDA
  std::vector<int32_t> buckets;  // ascending
  // (rows, draft extend tokens (0: none), steps)
  std::map<std::tuple<int32_t, int32_t, int32_t>, backend::CudaGraph> by_shape;
#endif
};

EagleChain::EagleChain(EagleDraftRunner& draft, const cache::ReqToTokenTable& req_to_token,
                       const Tensor& first_drafts, const Tensor& hidden_states, int32_t max_bs)
    : draft_(draft),
      req_to_token_(req_to_token),
      first_drafts_(first_drafts),
      hidden_states_(hidden_states),
      capacity_(max_bs),
      max_steps_(draft.num_steps() - 1),
      max_tokens_(draft.num_steps() + 1),
      max_context_len_(req_to_token.max_context_len()),
      arrays_(draft.target(), DType::kI32, extend_at(kExtendKvIndices) + kv_capacity()),
      pending_row_of_(static_cast<size_t>(req_to_token.size()), -1),
      graphs_(std::make_unique<Graphs>()) {
  ModelRunner& target = draft.target();
  const int64_t h = draft.config().llama.hidden_size;
  step_hidden_ = Buffer(target.allocator(), target.compute_dtype(), {capacity_, h});
  first_hidden_ = Buffer(target.allocator(), target.compute_dtype(), {capacity_, h});
  extend_hidden_ = Buffer(target.allocator(), target.compute_dtype(),
                          {int64_t{capacity_} * max_tokens_, draft.config().target_hidden_width()});
  // Padding rows read rows of these that no real row wrote yet: zeros first, not whatever the
  // memory held (later, finite leftovers of earlier batches).
  for (const Buffer* b : {&step_hidden_, &first_hidden_, &extend_hidden_}) {
    kernels::zero(*b, target.stream());
  }
  capture_graphs();
}

EagleChain::~EagleChain() = default;

int64_t EagleChain::step_at(int32_t array, int32_t step) const {
  return capacity_ + (static_cast<int64_t>(array) * max_steps_ + step - 1) * capacity_;
}
int64_t EagleChain::ones_at() const { return capacity_ + 4LL * max_steps_ * capacity_; }
int64_t EagleChain::qo_indptr_at() const { return ones_at() + capacity_; }
int64_t EagleChain::kv_indptr_at() const { return qo_indptr_at() + capacity_ + 1; }
int64_t EagleChain::kv_indices_at() const { return kv_indptr_at() + capacity_ + 1; }
int64_t EagleChain::ids_at(int32_t k) const {
  return kv_indices_at() + kv_capacity() + int64_t{k} * capacity_;
}
int64_t EagleChain::extend_at(int32_t array) const {
  const int64_t c = capacity_, tokens = c * max_tokens_;
  const int64_t sizes[] = {tokens, tokens, tokens, c, c, c, c + 1, c + 1, c};
  int64_t at = ids_at(max_steps_ + 1);
  for (int32_t a = 0; a < array; ++a) at += sizes[a];
  return at;
}

Tensor EagleChain::view_2d(int64_t at, int64_t rows, int64_t cols) const {
  return arrays_.view(at, rows * cols).reshape({rows, cols});
}

int64_t EagleChain::fill_chain(std::span<const ChainRequest> requests, int32_t rows,
                               int32_t steps) {
  SGL_CHECK(rows >= static_cast<int32_t>(requests.size()) && rows <= capacity_ &&
            steps <= max_steps_)
      << "draft chain of " << requests.size() << " requests in " << rows << " rows, " << steps
      << " steps";
  int32_t* h = arrays_.host_data<int32_t>();
  const int32_t max_pos = static_cast<int32_t>(draft_.target().context_length()) - 1;
  int64_t kv = 0;  // kv_indices used
  h[kv_indptr_at()] = 0;
  for (int32_t b = 0; b < rows; ++b) {
    h[ones_at() + b] = 1;
    h[qo_indptr_at() + b] = b;
    const bool real = b < static_cast<int32_t>(requests.size());
    const ChainRequest r = real ? requests[static_cast<size_t>(b)] : ChainRequest{};
    // A real row's slots (then the trash slot up to the longest step's reach, within the
    // context: a request near its end drafts less than the others); a padding row reads the
    // trash slot alone.
    const bool scratch = r.scratch_base >= 0;
    const int32_t own = real ? r.prefix_len + r.drafts - 1 : 0;
    SGL_CHECK(!real || (r.drafts >= 1 && own <= max_context_len_ &&
                        static_cast<int32_t>(r.kv_slots.size()) == (scratch ? r.prefix_len : own)))
        << "draft chain request row " << r.req_pool_idx << ": " << r.drafts << " drafts, "
        << r.kv_slots.size() << " slots at prefix " << r.prefix_len;
    // Step j's K/V slot (1 <= j < drafts): a scratch slot, or its position's.
    auto step_slot = [&](int32_t j) {
      return scratch ? r.scratch_base + j - 1
                     : r.kv_slots[static_cast<size_t>(r.prefix_len + j - 1)];
    };
    const int32_t listed =
        real ? std::max(own, std::min(r.prefix_len + steps, max_context_len_)) : 1;
    int32_t* indices = h + kv_indices_at() + kv;
    if (real) {
      std::copy(r.kv_slots.begin(), r.kv_slots.end(), indices);
      for (int32_t j = 1; scratch && j < r.drafts; ++j)
        indices[r.prefix_len + j - 1] = step_slot(j);
    }
    std::fill(indices + own, indices + listed, kTrashSlot);
    kv += listed;
    h[kv_indptr_at() + b + 1] = static_cast<int32_t>(kv);
    h[b] = r.req_pool_idx;  // the rows array
    for (int32_t j = 1; j <= steps; ++j) {
      // Step j of a request past its drafts (or a padding row) computes a harmless row: its K/V
      // to the trash slot, its reads within its list.
      const bool stores = real && j < r.drafts;
      h[step_at(kPositions, j) + b] = std::min(r.prefix_len + j - 1, max_pos);
      h[step_at(kSlots, j) + b] = stores ? step_slot(j) : kTrashSlot;
      const int32_t seq_len = real ? std::min(r.prefix_len + j, listed) : 1;
      h[step_at(kSeqLens, j) + b] = seq_len;
      h[step_at(kPrefixLens, j) + b] = seq_len - 1;
    }
  }
  h[qo_indptr_at() + rows] = rows;
  return kv_indices_at() + kv;
}

int64_t EagleChain::fill_extend(std::span<const VerifiedRequest> requests, int32_t rows,
                                int32_t tokens) {
  SGL_CHECK(rows >= static_cast<int32_t>(requests.size()) && rows <= capacity_ && tokens >= 1 &&
            tokens <= max_tokens_)
      << "draft extend of " << requests.size() << " requests in " << rows << " rows, " << tokens
      << " tokens";
  int32_t* h = arrays_.host_data<int32_t>();
  auto at = [&](ExtendArray a) { return h + extend_at(a); };
  const int32_t max_pos = static_cast<int32_t>(draft_.target().context_length()) - 1;
  int64_t kv = 0;
  at(kExtendKvIndptr)[0] = 0;
  for (int32_t b = 0; b < rows; ++b) {
    const bool real = b < static_cast<int32_t>(requests.size());
    const VerifiedRequest r = real ? requests[static_cast<size_t>(b)] : VerifiedRequest{};
    SGL_CHECK(!real || static_cast<int32_t>(r.kv_slots.size()) == r.prefix_len + tokens)
        << "draft extend request row " << r.req_pool_idx << ": " << r.kv_slots.size()
        << " slots at prefix " << r.prefix_len;
    // A real row's ids and out row follow from its accept count (apply_accept).
    for (int32_t i = 0; i < tokens; ++i) {
      const int64_t t = int64_t{b} * tokens + i;
      at(kExtendIds)[t] = 0;
      at(kExtendPositions)[t] = std::min(r.prefix_len + i, max_pos);
      at(kExtendSlots)[t] = real ? r.kv_slots[static_cast<size_t>(r.prefix_len + i)] : kTrashSlot;
    }
    at(kExtendSeqLens)[b] = r.prefix_len + tokens;
    at(kExtendPrefixLens)[b] = r.prefix_len;
    at(kExtendLens)[b] = tokens;
    at(kExtendQoIndptr)[b] = b * tokens;
    at(kExtendOutRows)[b] = b * tokens;
    int32_t* indices = at(kExtendKvIndices) + kv;
    if (real) {
      std::copy(r.kv_slots.begin(), r.kv_slots.end(), indices);
    } else {
      std::fill(indices, indices + tokens, kTrashSlot);
    }
    kv += r.prefix_len + tokens;
    at(kExtendKvIndptr)[b + 1] = static_cast<int32_t>(kv);
    h[b] = r.req_pool_idx;  // the rows array
  }
  at(kExtendQoIndptr)[rows] = rows * tokens;
  return extend_at(kExtendKvIndices) - extend_at(kExtendIds) + kv;
}

ForwardBatch EagleChain::pass_batch(ForwardMode mode, const StaticPassArrays& at, int32_t rows,
                                    int32_t tokens_each, int32_t max_seq_len) const {
  return static_pass_batch(mode, arrays_, at, rows, tokens_each, max_seq_len, req_to_token_);
}

ForwardBatch EagleChain::step_batch(int32_t step, int32_t rows, int32_t max_seq_len) const {
  return pass_batch(ForwardMode::kDecode,
                    {ids_at(step - 1), step_at(kPositions, step), step_at(kSlots, step),
                     step_at(kSeqLens, step), step_at(kPrefixLens, step), ones_at(), 0,
                     qo_indptr_at(), kv_indptr_at(), kv_indices_at(), kv_capacity()},
                    rows, 1, max_seq_len);
}

ForwardBatch EagleChain::extend_batch(int32_t rows, int32_t tokens, int32_t max_seq_len) const {
  return pass_batch(ForwardMode::kExtend,
                    {extend_at(kExtendIds), extend_at(kExtendPositions), extend_at(kExtendSlots),
                     extend_at(kExtendSeqLens), extend_at(kExtendPrefixLens),
                     extend_at(kExtendLens), 0, extend_at(kExtendQoIndptr),
                     extend_at(kExtendKvIndptr), extend_at(kExtendKvIndices), kv_capacity()},
                    rows, tokens, max_seq_len);
}

void EagleChain::enqueue(int32_t rows, int32_t tokens, int32_t steps, int32_t max_seq_len,
                         bool plan) {
  const backend::Stream stream = draft_.target().stream();
  const Tensor ids0 = arrays_.view(ids_at(0), rows);
  Tensor hidden = step_hidden_.tensor().slice_rows(0, rows);  // step 1's hidden input
  if (tokens > 0) {
    // The draft extend: every verified position, each request's row at its accepted path's end.
    const ForwardBatch fb = extend_batch(rows, tokens, max_seq_len);
    if (plan) draft_.attention().plan(fb);
    const model::DraftOutput out =
        draft_.forward_planned(fb, extend_hidden_.tensor().slice_rows(0, fb.num_tokens),
                               arrays_.view(extend_at(kExtendOutRows), rows));
    draft_.greedy_ids(out.logits, ids0);
    hidden = first_hidden_.tensor().slice_rows(0, rows);
    kernels::copy_async(out.hidden_states, hidden, stream);
  } else {
    const Tensor row_ids = arrays_.view(0, rows);
    kernels::embedding(row_ids, first_drafts_, ids0.reshape({rows, 1}), stream);
    kernels::embedding(row_ids, hidden_states_, hidden, stream);
  }
  for (int32_t j = 1; j <= steps; ++j) {
    const ForwardBatch fb = step_batch(j, rows, max_seq_len);
    if (plan) draft_.attention().plan(fb);
    const model::DraftOutput out = draft_.forward_planned(fb, hidden);
    draft_.greedy_ids(out.logits, arrays_.view(ids_at(j), rows));
    hidden = out.hidden_states;  // the next step reads them where they are (forward's contract)
  }
}

int32_t EagleChain::graph_rows(int32_t bs, int32_t tokens, int32_t steps) const {
#ifdef SGL_WITH_CUDA
  const auto it = std::lower_bound(graphs_->buckets.begin(), graphs_->buckets.end(), bs);
  if (it != graphs_->buckets.end() && graphs_->by_shape.count({*it, tokens, steps}) > 0) {
    return *it;
  }
#endif
  return 0;
}

void EagleChain::replay(int32_t rows, int32_t tokens, int32_t steps) {
#ifdef SGL_WITH_CUDA
  // NOTE: the backend prepares the graph's first pass only; the draft's backends (flash, cuda
  // reference) plan nothing for decode and extend passes, so the others need nothing either.
  draft_.attention().prepare_replay(tokens > 0 ? extend_batch(rows, tokens, max_context_len_)
                                               : step_batch(1, rows, max_context_len_));
  graphs_->by_shape.at({rows, tokens, steps}).replay(draft_.target().stream());
#else
  SGL_CHECK(false) << "EagleChain::replay in a build without CUDA";
#endif
}

void EagleChain::capture_graphs() {
#ifdef SGL_WITH_CUDA
  const ModelRunnerOptions& o = draft_.target().options();
  if (o.device.is_cpu() || o.disable_cuda_graph) return;
  const auto max_graph_bs = static_cast<int32_t>(std::min<int64_t>(o.cuda_graph_max_bs, capacity_));
  if (max_graph_bs < 1) return;
  graphs_->buckets = cuda_graph_batch_sizes(max_graph_bs);
  const auto start = std::chrono::steady_clock::now();
  const backend::Stream stream = draft_.target().stream();
  draft_.attention().init_graph_capture(graphs_->buckets, max_context_len_);
  // Shapes: chains of 1..max_steps_ steps from the draft state; draft extends of 2..max_tokens_
  // tokens a request, then max_steps_ steps.
  std::vector<std::pair<int32_t, int32_t>> shapes;  // (tokens, steps)
  for (int32_t steps = 1; steps <= max_steps_; ++steps) shapes.emplace_back(0, steps);
  for (int32_t tokens = 2; tokens <= max_tokens_; ++tokens) shapes.emplace_back(tokens, max_steps_);
  for (auto b = graphs_->buckets.rbegin(); b != graphs_->buckets.rend(); ++b) {
    for (const auto& [tokens, steps] : shapes) {
      // A draft extend of b x tokens tokens must fit the draft model's passes (else it runs
      // eagerly, unpadded).
      if (int64_t{*b} * std::max(tokens, 1) > o.max_num_tokens) continue;
      // Every row padding (what the fills leave past the real rows): one eager run, then the
      // capture, largest bucket first.
      arrays_.upload(0, fill_chain({}, *b, steps));
      if (tokens > 0) arrays_.upload(extend_at(kExtendIds), fill_extend({}, *b, tokens));
      if (tokens > 0) draft_.attention().plan(extend_batch(*b, tokens, max_context_len_));
      for (int32_t j = 1; j <= steps; ++j) {
        draft_.attention().plan(step_batch(j, *b, max_context_len_));
      }
      draft_.attention().prepare_capture(tokens > 0 ? extend_batch(*b, tokens, max_context_len_)
                                                    : step_batch(1, *b, max_context_len_));
      enqueue(*b, tokens, steps, max_context_len_, /*plan=*/false);
      backend::synchronize(stream);
      graphs_->by_shape.emplace(std::tuple(*b, tokens, steps),
                                backend::CudaGraph::capture(stream, [&] {
                                  enqueue(*b, tokens, steps, max_context_len_, /*plan=*/false);
                                }));
    }
  }
  backend::synchronize(stream);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  SGL_LOG_INFO << "captured " << graphs_->by_shape.size() << " EAGLE draft CUDA graphs (batch 1.."
               << graphs_->buckets.back() << ", chains of 1.." << max_steps_
               << " steps, draft extends of 2.." << max_tokens_ << " tokens) in " << took.count()
               << " s";
#endif
}

std::vector<std::vector<int32_t>> EagleChain::draft(std::span<const ChainRequest> requests) {
  pending_copied_.synchronize();  // the host arrays are free once the last run read them
  clear_pending();                // the ids below overwrite them
  const auto bs = static_cast<int32_t>(requests.size());
  int32_t drafts = 0, max_prefix = 0;
  for (const ChainRequest& r : requests) {
    drafts = std::max(drafts, r.drafts);
    max_prefix = std::max(max_prefix, r.prefix_len);
  }
  SGL_CHECK(bs >= 1 && drafts <= max_steps_ + 1)
      << "draft chain of " << bs << " requests, " << drafts << " drafts (at most " << max_steps_ + 1
      << ")";
  const int32_t steps = drafts - 1;
  const int32_t bucket = steps >= 1 ? graph_rows(bs, 0, steps) : 0;
  const int32_t rows = bucket > 0 ? bucket : bs;
  arrays_.upload(0, fill_chain(requests, rows, steps));
  if (bucket > 0) {
    replay(rows, 0, steps);
  } else {
    // Every row's reads reach at most position max_prefix + steps (its list's end).
    enqueue(rows, 0, steps, std::min(max_prefix + drafts - 1, max_context_len_), /*plan=*/true);
  }
  // Drafts k = 0..steps of every row, one copy (the arrays are capacity apart).
  const int64_t n = int64_t{drafts} * capacity_;
  arrays_.download(ids_at(0), n);
  backend::synchronize(draft_.target().stream());
  const int32_t* h = arrays_.host_data<int32_t>() + ids_at(0);
  std::vector<std::vector<int32_t>> out(requests.size());
  for (int32_t b = 0; b < bs; ++b) {
    for (int32_t k = 0; k < requests[static_cast<size_t>(b)].drafts; ++k) {
      out[static_cast<size_t>(b)].push_back(h[int64_t{k} * capacity_ + b]);
    }
  }
  return out;
}

void EagleChain::extend_and_draft(std::span<const VerifiedRequest> requests, int32_t tokens,
                                  const Tensor& target_hidden, const VerifyIds& ids) {
  const auto bs = static_cast<int32_t>(requests.size());
  SGL_CHECK(bs >= 1 && bs <= capacity_ && tokens >= 2 && tokens <= max_tokens_ &&
            target_hidden.size(0) == int64_t{bs} * tokens &&
            target_hidden.size(1) == extend_hidden_.tensor().size(1) &&
            ids.input_ids.numel() == int64_t{bs} * tokens &&
            ids.sampled.numel() == int64_t{bs} * tokens)
      << "draft extend of " << bs << " requests, " << tokens << " tokens, hidden "
      << target_hidden.shape_string();
  const backend::Stream stream = draft_.target().stream();
  pending_copied_.synchronize();  // the host arrays are free once the last run read them
  kernels::copy_async(target_hidden, extend_hidden_.tensor().slice_rows(0, target_hidden.size(0)),
                      stream);
  // Each request's next chain, filled as if every draft stood (its last token at prefix_len +
  // tokens); apply_accept moves it to the accepted path's end + 1. Its steps' K/V go to its
  // row's scratch slots after its kept ones.
  int32_t max_seq_len = 1;
  std::vector<ChainRequest> chains;
  clear_pending();
  for (int32_t b = 0; b < bs; ++b) {
    const VerifiedRequest& r = requests[static_cast<size_t>(b)];
    const int32_t longest_prefix = r.prefix_len + tokens;
    max_seq_len = std::max(max_seq_len, longest_prefix + max_steps_);
    chains.push_back({r.req_pool_idx, longest_prefix, max_steps_ + 1, r.kv_slots,
                      draft_.scratch_slot_base() + b * max_steps_});
    pending_.push_back({r.req_pool_idx, -1, {}});
    pending_verify_prefix_.push_back(r.prefix_len);
  }
  const int32_t bucket = graph_rows(bs, tokens, max_steps_);
  const int32_t rows = bucket > 0 ? bucket : bs;
  const int64_t chain_ints = fill_chain(chains, rows, max_steps_);
  const int64_t extend_ints = fill_extend(requests, rows, tokens);  // rewrites the rows array
  arrays_.upload(0, chain_ints);
  arrays_.upload(extend_at(kExtendIds), extend_ints);
  apply_accept(bs, tokens, ids);
  if (bucket > 0) {
    replay(rows, tokens, max_steps_);
  } else {
    enqueue(rows, tokens, max_steps_, max_seq_len, /*plan=*/true);
  }
  // The draft state at each accepted path's end (a later draft() reads it).
  const Tensor row_ids = arrays_.view(0, bs);
  kernels::scatter_rows(first_hidden_.tensor().slice_rows(0, bs), row_ids, hidden_states_, stream);
  kernels::scatter_rows(view_2d(ids_at(0), bs, 1), row_ids, first_drafts_, stream);
  arrays_.download(ids_at(0), int64_t{max_steps_ + 1} * capacity_);
  pending_copied_.record(stream);
}

void EagleChain::apply_accept(int32_t bs, int32_t tokens, const VerifyIds& ids) {
  auto ptr = [&](int64_t at) { return arrays_.view(at, 1).data<int32_t>(); };
  const ChainAcceptArgs args{
      .verify_ids = ids.input_ids.data<int32_t>(),
      .id_table = ids.id_table.defined() ? ids.id_table.data<int32_t>() : nullptr,
      .sampled = ids.sampled.data<int32_t>(),
      .bs = bs,
      .tokens = tokens,
      .forced_accept = ids.forced_accept,
      .vocab_size = static_cast<int32_t>(draft_.target().config().vocab_size),
      .steps = max_steps_,
      .capacity = capacity_,
      .max_position = static_cast<int32_t>(draft_.target().context_length()) - 1,
      .scratch_base = draft_.scratch_slot_base(),
      .prefix_lens = ptr(extend_at(kExtendPrefixLens)),
      .kv_indptr = ptr(kv_indptr_at()),
      .extend_ids = ptr(extend_at(kExtendIds)),
      .out_rows = ptr(extend_at(kExtendOutRows)),
      .positions = ptr(step_at(kPositions, 1)),
      .seq_lens = ptr(step_at(kSeqLens, 1)),
      .step_prefix_lens = ptr(step_at(kPrefixLens, 1)),
      .kv_indices = ptr(kv_indices_at())};
  if (!arrays_.on_device()) {
    for (int32_t b = 0; b < bs; ++b) apply_chain_accept(args, b);
    return;
  }
#ifdef SGL_WITH_CUDA
  cuda::apply_chain_accept(args, draft_.target().stream());
#endif
}

void EagleChain::set_accepted(std::span<const int32_t> accepted) {
  SGL_CHECK_EQ(accepted.size(), pending_.size()) << "accept counts of another verify";
  for (size_t b = 0; b < pending_.size(); ++b) {
    pending_[b].prefix_len = pending_verify_prefix_[b] + accepted[b] + 1;
    pending_row_of_[static_cast<size_t>(pending_[b].req_pool_idx)] = static_cast<int32_t>(b);
  }
}

int32_t EagleChain::pending_row(int32_t req_pool_idx, int32_t prefix_len) const {
  const int32_t b = pending_row_of_[static_cast<size_t>(req_pool_idx)];
  return b >= 0 && pending_[static_cast<size_t>(b)].prefix_len == prefix_len ? b : -1;
}

void EagleChain::clear_pending() {
  for (const PendingDrafts& p : pending_) pending_row_of_[static_cast<size_t>(p.req_pool_idx)] = -1;
  pending_.clear();
  pending_verify_prefix_.clear();
}

Tensor EagleChain::draft_ids() const {
  return arrays_.view(ids_at(0), int64_t{max_steps_ + 1} * capacity_);
}

std::vector<PendingDrafts> EagleChain::take_drafts() {
  if (pending_.empty()) return {};
  pending_copied_.synchronize();
  const int32_t* h = arrays_.host_data<int32_t>() + ids_at(0);
  std::vector<PendingDrafts> out = pending_;
  clear_pending();
  for (size_t b = 0; b < out.size(); ++b) {
    for (int32_t k = 0; k <= max_steps_; ++k) {
      out[b].drafts.push_back(h[int64_t{k} * capacity_ + static_cast<int64_t>(b)]);
    }
  }
  return out;
}

}  // namespace sgl::runner
