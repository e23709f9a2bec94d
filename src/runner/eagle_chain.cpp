// EagleChain: static arrays, the step batches, eager runs and (GPU) graph replays.
#include "runner/eagle_chain.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "backend/backend.h"
#include "core/check.h"
#include "core/logging.h"
#include "kernels/copy.h"
#include "kernels/embedding.h"
#ifdef SGL_WITH_CUDA
#include "backend/cuda/cuda_graph.h"
#include "runner/cuda_graph_runner.h"
#endif

namespace sgl::runner {

// The step arrays, in step_at's order.
enum StepArray : int32_t { kPositions = 0, kSlots = 1, kSeqLens = 2, kPrefixLens = 3 };

struct EagleChain::Graphs {
#ifdef SGL_WITH_CUDA
  std::vector<int32_t> buckets;                              // ascending
  std::map<std::pair<int32_t, int32_t>, backend::CudaGraph> by_shape;  // (rows, steps)
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
      max_context_len_(req_to_token.max_context_len()),
      graphs_(std::make_unique<Graphs>()) {
  ModelRunner& target = draft.target();
  const int64_t total = draft_ids_at() + capacity_;
  if (target.options().device.is_cpu()) {
    host_ = Buffer(target.allocator(), DType::kI32, {total});
  } else {
    staging_allocator_ = backend::create_staging_allocator(target.options().device);
    host_ = Buffer(*staging_allocator_, DType::kI32, {total});
    device_ = Buffer(target.allocator(), DType::kI32, {total});
  }
  step_hidden_ = Buffer(target.allocator(), target.compute_dtype(),
                        {capacity_, draft.config().llama.hidden_size});
#ifdef SGL_WITH_CUDA
  const ModelRunnerOptions& o = target.options();
  if (o.device.is_cpu() || o.disable_cuda_graph || max_steps_ < 1) return;
  const auto max_graph_bs = static_cast<int32_t>(
      std::min<int64_t>({o.cuda_graph_max_bs, static_cast<int64_t>(max_bs)}));
  if (max_graph_bs < 1) return;
  graphs_->buckets = cuda_graph_batch_sizes(max_graph_bs);
  const auto start = std::chrono::steady_clock::now();
  const backend::Stream stream = target.stream();
  draft.attention().init_graph_capture(graphs_->buckets, max_context_len_);
  // Every row padding (what fill() leaves past the real rows), then per shape one eager run
  // and the capture, largest first.
  const int64_t upload = fill({}, graphs_->buckets.back(), max_steps_);
  kernels::copy(host_.tensor().slice_rows(0, upload), device_.tensor().slice_rows(0, upload),
                stream);
  for (auto b = graphs_->buckets.rbegin(); b != graphs_->buckets.rend(); ++b) {
    for (int32_t steps = max_steps_; steps >= 1; --steps) {
      for (int32_t j = 1; j <= steps; ++j) {
        const ForwardBatch fb = step_batch(j, *b, max_context_len_);
        draft.attention().plan(fb);
        draft.attention().prepare_capture(fb);
      }
      enqueue(*b, steps, max_context_len_, /*plan=*/false);
      backend::synchronize(stream);
      graphs_->by_shape.emplace(
          std::pair(*b, steps), backend::CudaGraph::capture(stream, [&] {
            enqueue(*b, steps, max_context_len_, /*plan=*/false);
          }));
    }
  }
  backend::synchronize(stream);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  SGL_LOG_INFO << "captured " << graphs_->by_shape.size() << " EAGLE draft chain CUDA graphs (batch 1.."
               << graphs_->buckets.back() << ", 1.." << max_steps_ << " steps) in " << took.count()
               << " s";
#endif
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
  return kv_indices_at() + static_cast<int64_t>(capacity_) * max_context_len_ +
         static_cast<int64_t>(k) * capacity_;
}
int64_t EagleChain::draft_ids_at() const { return ids_at(max_steps_ + 1); }

Tensor EagleChain::device_view(int64_t at, int64_t n) const {
  const Buffer& b = device_.tensor().defined() ? device_ : host_;
  return b.tensor().slice_rows(at, n);
}

int64_t EagleChain::fill(std::span<const ChainRequest> requests, int32_t rows, int32_t steps) {
  SGL_CHECK(rows >= static_cast<int32_t>(requests.size()) && rows <= capacity_ &&
            steps <= max_steps_)
      << "draft chain of " << requests.size() << " requests in " << rows << " rows, " << steps
      << " steps";
  int32_t* h = host_.data<int32_t>();
  // The dummy slot no token owns (cache/token_to_kv_pool_allocator.h), as in the decode graphs.
  constexpr int32_t trash = 0;
  const int32_t max_pos = static_cast<int32_t>(draft_.target().context_length()) - 1;
  int64_t kv = 0;  // kv_indices used
  h[kv_indptr_at()] = 0;
  for (int32_t b = 0; b < rows; ++b) {
    h[ones_at() + b] = 1;
    h[qo_indptr_at() + b] = b;
    const bool real = b < static_cast<int32_t>(requests.size());
    const ChainRequest r = real ? requests[static_cast<size_t>(b)] : ChainRequest{};
    // A real row's slots (then the trash slot up to the longest step's reach); a padding row
    // reads the trash slot alone.
    const int32_t own = real ? r.prefix_len + r.drafts - 1 : 0;
    const int32_t listed = real ? r.prefix_len + std::max(r.drafts, steps + 1) - 1 : 1;
    SGL_CHECK(!real || (r.drafts >= 1 && static_cast<int32_t>(r.kv_slots.size()) == own &&
                        listed <= max_context_len_))
        << "draft chain request row " << r.req_pool_idx << ": " << r.drafts << " drafts, "
        << r.kv_slots.size() << " slots at prefix " << r.prefix_len;
    int32_t* indices = h + kv_indices_at() + kv;
    if (real) std::copy(r.kv_slots.begin(), r.kv_slots.end(), indices);
    std::fill(indices + own, indices + listed, trash);
    kv += listed;
    h[kv_indptr_at() + b + 1] = static_cast<int32_t>(kv);
    h[rows_at() + b] = r.req_pool_idx;
    for (int32_t j = 1; j <= steps; ++j) {
      // Step j of a request past its drafts (or a padding row) computes a harmless row: its K/V
      // to the trash slot, its reads within its list.
      const bool stores = real && j < r.drafts;
      h[step_at(kPositions, j) + b] = std::min(r.prefix_len + j - 1, max_pos);
      h[step_at(kSlots, j) + b] = stores ? r.kv_slots[static_cast<size_t>(r.prefix_len + j - 1)]
                                         : trash;
      h[step_at(kSeqLens, j) + b] = real ? r.prefix_len + j : 1;
      h[step_at(kPrefixLens, j) + b] = real ? r.prefix_len + j - 1 : 0;
    }
  }
  h[qo_indptr_at() + rows] = rows;
  return kv_indices_at() + kv;
}

ForwardBatch EagleChain::step_batch(int32_t step, int32_t rows, int32_t max_seq_len) const {
  const int32_t* h = host_.data<int32_t>();
  const auto n = static_cast<size_t>(rows);
  ForwardBatch fb;
  fb.mode = ForwardMode::kDecode;
  fb.logits_mode = LogitsMode::kLastPerRequest;
  fb.batch_size = rows;
  fb.num_tokens = rows;
  fb.max_seq_len = max_seq_len;
  fb.input_ids = device_view(ids_at(step - 1), rows);
  fb.positions = device_view(step_at(kPositions, step), rows);
  fb.out_cache_loc = device_view(step_at(kSlots, step), rows);
  fb.seq_lens = device_view(step_at(kSeqLens, step), rows);
  fb.extend_prefix_lens = device_view(step_at(kPrefixLens, step), rows);
  fb.extend_seq_lens = device_view(ones_at(), rows);
  fb.qo_indptr = device_view(qo_indptr_at(), rows + 1);
  fb.req_pool_indices = device_view(rows_at(), rows);
  fb.kv_indptr = device_view(kv_indptr_at(), rows + 1);
  fb.kv_indices = device_view(kv_indices_at(), static_cast<int64_t>(capacity_) * max_context_len_);
  fb.req_to_token = Tensor(const_cast<int32_t*>(req_to_token_.data()), DType::kI32,
                           {req_to_token_.size(), req_to_token_.max_context_len()});
  // Host mirrors (the CPU attention reads them; a graph's are the padded capture's).
  fb.seq_lens_host = std::span(h + step_at(kSeqLens, step), n);
  fb.extend_prefix_lens_host = std::span(h + step_at(kPrefixLens, step), n);
  fb.extend_seq_lens_host = std::span(h + ones_at(), n);
  fb.qo_indptr_host = std::span(h + qo_indptr_at(), n + 1);
  fb.req_pool_indices_host = std::span(h + rows_at(), n);
  return fb;
}

void EagleChain::enqueue(int32_t rows, int32_t steps, int32_t max_seq_len, bool plan) {
  const backend::Stream stream = draft_.target().stream();
  const Tensor row_ids = device_view(rows_at(), rows);
  const Tensor hidden = step_hidden_.tensor().slice_rows(0, rows);
  kernels::embedding(row_ids, first_drafts_, device_view(ids_at(0), rows).reshape({rows, 1}),
                     stream);
  kernels::embedding(row_ids, hidden_states_, hidden, stream);
  for (int32_t j = 1; j <= steps; ++j) {
    const ForwardBatch fb = step_batch(j, rows, max_seq_len);
    const model::DraftOutput out =
        plan ? draft_.forward(fb, hidden) : draft_.forward_planned(fb, hidden);
    draft_.greedy_ids(out.logits, device_view(draft_ids_at(), rows), device_view(ids_at(j), rows));
    if (j < steps) kernels::copy_async(out.hidden_states, hidden, stream);
  }
}

std::vector<std::vector<int32_t>> EagleChain::run(std::span<const ChainRequest> requests) {
  const auto bs = static_cast<int32_t>(requests.size());
  int32_t drafts = 0, max_prefix = 0;
  for (const ChainRequest& r : requests) {
    drafts = std::max(drafts, r.drafts);
    max_prefix = std::max(max_prefix, r.prefix_len);
  }
  SGL_CHECK(bs >= 1 && drafts <= max_steps_ + 1)
      << "draft chain of " << bs << " requests, " << drafts << " drafts (at most "
      << max_steps_ + 1 << ")";
  const int32_t steps = drafts - 1;
  const backend::Stream stream = draft_.target().stream();
  bool replayed = false;
#ifdef SGL_WITH_CUDA
  const auto bucket = std::lower_bound(graphs_->buckets.begin(), graphs_->buckets.end(), bs);
  if (steps >= 1 && bucket != graphs_->buckets.end()) {
    const int64_t upload = fill(requests, *bucket, steps);
    kernels::copy_async(host_.tensor().slice_rows(0, upload),
                        device_.tensor().slice_rows(0, upload), stream);
    draft_.attention().prepare_replay(step_batch(1, *bucket, max_context_len_));
    graphs_->by_shape.at({*bucket, steps}).replay(stream);
    replayed = true;
  }
#endif
  if (!replayed) {
    const int64_t upload = fill(requests, bs, steps);
    if (device_.tensor().defined()) {
      kernels::copy_async(host_.tensor().slice_rows(0, upload),
                          device_.tensor().slice_rows(0, upload), stream);
    }
    // Every row's reads reach at most position max_prefix + steps (its list's end).
    enqueue(bs, steps, max_prefix + drafts - 1, /*plan=*/true);
  }
  // Drafts k = 0..steps of every row, one copy (the arrays are capacity apart).
  const int64_t n = static_cast<int64_t>(drafts) * capacity_;
  Tensor ids = host_.tensor().slice_rows(ids_at(0), n);
  if (device_.tensor().defined()) kernels::copy(device_view(ids_at(0), n), ids, stream);
  const int32_t* h = ids.data<int32_t>();
  std::vector<std::vector<int32_t>> out(requests.size());
  for (int32_t b = 0; b < bs; ++b) {
    for (int32_t k = 0; k < requests[static_cast<size_t>(b)].drafts; ++k) {
      out[static_cast<size_t>(b)].push_back(h[static_cast<int64_t>(k) * capacity_ + b]);
    }
  }
  return out;
}

}  // namespace sgl::runner
