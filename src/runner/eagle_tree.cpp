// EagleTree: static arrays, the steps, eager runs and (GPU) graph replays, the host's trees.
#include "runner/eagle_tree.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "backend/backend.h"
#include "core/check.h"
#include "core/logging.h"
#include "kernels/copy.h"
#include "kernels/embedding.h"
#include "runner/eagle_tree_select.h"
#ifdef SGL_WITH_CUDA
#include "backend/cuda/cuda_graph.h"
#include "runner/cuda_graph_runner.h"
#endif

namespace sgl::runner {
namespace {

// Each step's per-branch arrays, in step_at's order: its input ids, the rows its hidden inputs
// come from (step 0: the request rows of the draft state; later: the parents' branches), then
// what a decode pass reads.
enum StepArray : int32_t {
  kIds = 0,
  kSources,
  kPositions,
  kSlots,
  kSeqLens,
  kPrefixLens,
  kStepArrays
};
// Per-branch arrays that stay over the steps, then per-request-row ones, in row_at's order.
enum RowArray : int32_t { kBranchRows = 0, kRowPrefixLens, kRowSlotBases, kRowArrays };

// The dummy slot no token owns (cache/token_to_kv_pool_allocator.h): padding rows store there.
constexpr int32_t kTrashSlot = 0;

}  // namespace

struct EagleTree::Graphs {
#ifdef SGL_WITH_CUDA
  std::vector<int32_t> buckets;  // ascending, in request rows
  std::map<int32_t, backend::CudaGraph> by_rows;
#endif
};

EagleTree::EagleTree(EagleDraftRunner& draft, const cache::ReqToTokenTable& req_to_token,
                     const Tensor& hidden_states, DraftTopK& top_k)
    : draft_(draft),
      req_to_token_(req_to_token),
      hidden_states_(hidden_states),
      k_(draft.topk()),
      steps_(draft.num_steps() - 1),
      capacity_(std::max<int32_t>(
          1, static_cast<int32_t>(draft.target().options().max_batch_size / draft.topk()))),
      branches_(capacity_ * k_),
      list_capacity_(req_to_token.max_context_len() + steps_),
      top_k_(top_k),
      ints_(draft.target(), DType::kI32, kv_indices_at() + kv_capacity()),
      floats_(draft.target(), DType::kF32, child_logprobs_at(steps_)),
      graphs_(std::make_unique<Graphs>()) {
  ModelRunner& target = draft.target();
  SGL_CHECK_LE(branches_, target.options().max_num_tokens)
      << "--speculative-eagle-topk " << k_ << " needs a draft pass of " << branches_ << " tokens";
  SGL_CHECK(top_k.k() == k_ && top_k.max_rows() >= branches_)
      << "a top " << top_k.k() << " of " << top_k.max_rows() << " rows for " << branches_
      << " branches of " << k_;
  const int64_t h = draft.config().llama.hidden_size;
  branch_in_ = Buffer(target.allocator(), target.compute_dtype(), {branches_, h});
  branch_out_ = Buffer(target.allocator(), target.compute_dtype(), {branches_, h});
  // Padding rows read rows no real row wrote yet: zeros, not whatever the memory held.
  for (const Buffer* b : {&branch_in_, &branch_out_}) kernels::zero(*b, target.stream());
  capture_graphs();
}

EagleTree::~EagleTree() = default;

int64_t EagleTree::step_at(int32_t array, int32_t t) const {
  return (int64_t{array} * steps_ + t) * branches_;
}
int64_t EagleTree::row_at(int32_t array) const {
  return step_at(kStepArrays, 0) +
         (array == kBranchRows ? 0 : branches_ + int64_t{array - 1} * capacity_);
}
int64_t EagleTree::ones_at() const { return row_at(kRowArrays); }
int64_t EagleTree::qo_indptr_at() const { return ones_at() + branches_; }
int64_t EagleTree::kv_indptr_at() const { return qo_indptr_at() + branches_ + 1; }
int64_t EagleTree::child_ids_at(int32_t t) const {
  return kv_indptr_at() + branches_ + 1 + int64_t{t} * branches_ * k_;
}
int64_t EagleTree::children_at(int32_t t) const {
  return child_ids_at(steps_) + int64_t{t} * branches_;
}
int64_t EagleTree::kv_indices_at() const { return children_at(steps_); }
int64_t EagleTree::scores_at(int32_t t) const { return int64_t{t} * branches_; }
int64_t EagleTree::child_logprobs_at(int32_t t) const {
  return scores_at(steps_) + int64_t{t} * branches_ * k_;
}

int64_t EagleTree::fill(std::span<const TreeRequest> requests, int32_t first_request,
                        int32_t rows) {
  SGL_CHECK(rows >= static_cast<int32_t>(requests.size()) && rows <= capacity_)
      << "draft trees of " << requests.size() << " requests in " << rows << " rows";
  int32_t* h = ints_.host_data<int32_t>();
  float* scores = floats_.host_data<float>() + scores_at(0);
  const int32_t max_pos = static_cast<int32_t>(draft_.target().context_length()) - 1;
  int64_t kv = 0;  // kv_indices used
  for (int32_t b = 0; b < rows; ++b) {
    const bool real = b < static_cast<int32_t>(requests.size());
    const TreeRequest r = real ? requests[static_cast<size_t>(b)] : TreeRequest{};
    SGL_CHECK(!real || (static_cast<int32_t>(r.first.size()) == k_ &&
                        static_cast<int32_t>(r.kv_slots.size()) == r.prefix_len &&
                        r.prefix_len + steps_ <= list_capacity_))
        << "draft tree request row " << r.req_pool_idx << ": " << r.first.size()
        << " first drafts, " << r.kv_slots.size() << " slots at prefix " << r.prefix_len;
    // Step t's node f of a real row stores its K/V at slot_base + t * k + f.
    const int32_t slot_base =
        real ? draft_.scratch_slot_base() + (first_request + b) * steps_ * k_ : -1;
    h[row_at(kRowPrefixLens) + b] = r.prefix_len;
    h[row_at(kRowSlotBases) + b] = slot_base;
    for (int32_t f = 0; f < k_; ++f) {
      const int32_t i = b * k_ + f;
      h[row_at(kBranchRows) + i] = r.req_pool_idx;
      h[ones_at() + i] = 1;
      h[qo_indptr_at() + i] = i;
      // The prefix, then the tail of ancestors' slots and its own (select() writes it from step
      // 1 on; a padding row's all trash).
      h[kv_indptr_at() + i] = static_cast<int32_t>(kv);
      int32_t* list = h + kv_indices_at() + kv;
      std::copy(r.kv_slots.begin(), r.kv_slots.end(), list);
      std::fill(list + r.prefix_len, list + r.prefix_len + steps_, kTrashSlot);
      if (real) list[r.prefix_len] = slot_base + f;
      kv += r.prefix_len + steps_;
      for (int32_t t = 0; t < steps_; ++t) {
        h[step_at(kPositions, t) + i] = std::min(r.prefix_len + t, max_pos);
        h[step_at(kSlots, t) + i] = real ? slot_base + t * k_ + f : kTrashSlot;
        h[step_at(kSeqLens, t) + i] = r.prefix_len + t + 1;
        h[step_at(kPrefixLens, t) + i] = r.prefix_len + t;
      }
      // Step 0's frontier: the first distribution's top k, in order (DraftTreeBuilder's too).
      h[step_at(kIds, 0) + i] = real ? r.first[static_cast<size_t>(f)].token : 0;
      h[step_at(kSources, 0) + i] = r.req_pool_idx;
      scores[i] = real ? std::min(0.f, r.first[static_cast<size_t>(f)].logprob) : 0.f;
    }
  }
  h[kv_indptr_at() + int64_t{rows} * k_] = static_cast<int32_t>(kv);
  h[qo_indptr_at() + int64_t{rows} * k_] = rows * k_;
  return kv_indices_at() + kv;
}

ForwardBatch EagleTree::step_batch(int32_t t, int32_t rows, int32_t max_seq_len) const {
  return static_pass_batch(
      ForwardMode::kDecode, ints_,
      {step_at(kIds, t), step_at(kPositions, t), step_at(kSlots, t), step_at(kSeqLens, t),
       step_at(kPrefixLens, t), ones_at(), row_at(kBranchRows), qo_indptr_at(), kv_indptr_at(),
       kv_indices_at(), kv_capacity()},
      rows * k_, 1, max_seq_len, req_to_token_);
}

void EagleTree::select(int32_t t, int32_t rows) {
  auto i32 = [&](int64_t at) { return ints_.view(at, 1).data<int32_t>(); };
  auto f32 = [&](int64_t at) { return floats_.view(at, 1).data<float>(); };
  const bool last = t + 1 == steps_;  // maps its children's ids, chooses nothing
  const TreeSelectArgs args{.k = k_,
                            .steps = steps_,
                            .t = t,
                            .trash_slot = kTrashSlot,
                            .draft_to_target = draft_.draft_to_target_table(),
                            .child_ids = i32(child_ids_at(t)),
                            .child_logprobs = f32(child_logprobs_at(t)),
                            .scores = f32(scores_at(t)),
                            .next_ids = last ? nullptr : i32(step_at(kIds, t + 1)),
                            .next_sources = last ? nullptr : i32(step_at(kSources, t + 1)),
                            .next_scores = last ? nullptr : f32(scores_at(t + 1)),
                            .children = i32(children_at(0)),
                            .rows = rows,
                            .stride = branches_,
                            .slot_bases = i32(row_at(kRowSlotBases)),
                            .prefix_lens = i32(row_at(kRowPrefixLens)),
                            .kv_indptr = i32(kv_indptr_at()),
                            .kv_indices = i32(kv_indices_at())};
  if (!ints_.on_device()) {
    for (int32_t b = 0; b < rows; ++b) apply_tree_select(args, b);
    return;
  }
#ifdef SGL_WITH_CUDA
  cuda::apply_tree_select(args, draft_.target().stream());
#endif
}

void EagleTree::enqueue(int32_t rows, int32_t max_seq_len, bool plan) {
  const backend::Stream stream = draft_.target().stream();
  const int32_t n = rows * k_;
  const Tensor hidden_in = branch_in_.tensor().slice_rows(0, n);
  for (int32_t t = 0; t < steps_; ++t) {
    kernels::embedding(ints_.view(step_at(kSources, t), n),
                       t == 0 ? hidden_states_ : branch_out_.tensor(), hidden_in, stream);
    const ForwardBatch fb = step_batch(t, rows, max_seq_len);
    if (plan) draft_.attention().plan(fb);
    const model::DraftOutput out = draft_.forward_planned(fb, hidden_in);
    top_k_.run(out.logits, ints_.view(child_ids_at(t), int64_t{n} * k_).reshape({n, k_}),
               floats_.view(child_logprobs_at(t), int64_t{n} * k_).reshape({n, k_}));
    if (t + 1 < steps_) {
      kernels::copy_async(out.hidden_states, branch_out_.tensor().slice_rows(0, n), stream);
    }
    select(t, rows);
  }
}

std::vector<speculative::DraftTree> EagleTree::build(std::span<const TreeRequest> requests) {
  // Every step's children and frontiers, one copy (they lie together), and their log-probs.
  ints_.download(child_ids_at(0), kv_indices_at() - child_ids_at(0));
  floats_.download(child_logprobs_at(0), child_logprobs_at(steps_) - child_logprobs_at(0));
  backend::synchronize(draft_.target().stream());
  const int32_t* ids = ints_.host_data<int32_t>() + child_ids_at(0);
  const float* logprobs = floats_.host_data<float>() + child_logprobs_at(0);
  std::vector<speculative::DraftTree> trees;
  std::vector<speculative::TokenLogprob> children(static_cast<size_t>(k_));
  for (int32_t b = 0; b < static_cast<int32_t>(requests.size()); ++b) {
    const TreeRequest& r = requests[static_cast<size_t>(b)];
    speculative::DraftTreeBuilder tree(k_);
    tree.add_children(-1, r.first);
    std::vector<int32_t> frontier = tree.take_frontier();
    // fill() gave branch f the f-th first draft: the first distribution's top k come sorted.
    for (int32_t f = 0; f < k_; ++f) {
      SGL_CHECK_EQ(frontier[static_cast<size_t>(f)], f)
          << "request row " << r.req_pool_idx << ": its first drafts are not in rank order";
    }
    for (int32_t t = 0; t < steps_; ++t) {
      const int32_t begin = tree.size();
      for (int32_t f = 0; f < k_; ++f) {
        const int64_t at = (int64_t{t} * branches_ + b * k_ + f) * k_;
        for (int32_t j = 0; j < k_; ++j) {
          children[static_cast<size_t>(j)] = {ids[at + j], logprobs[at + j]};
        }
        tree.add_children(frontier[static_cast<size_t>(f)], children);
      }
      frontier = tree.take_frontier();
      // The device expanded the frontier the host just chose (the same scores, the same order).
      for (int32_t f = 0; t + 1 < steps_ && f < k_; ++f) {
        SGL_CHECK_EQ(frontier[static_cast<size_t>(f)] - begin,
                     ints_.host_data<int32_t>()[children_at(t + 1) + b * k_ + f])
            << "request row " << r.req_pool_idx << ": the device's tree frontier at step " << t + 1;
      }
    }
    trees.push_back(tree.select(r.nodes));
  }
  return trees;
}

std::vector<speculative::DraftTree> EagleTree::draft(std::span<const TreeRequest> requests) {
  std::vector<speculative::DraftTree> trees;
  const auto bs = static_cast<int32_t>(requests.size());
  SGL_CHECK_LE(bs, draft_.target().options().max_batch_size) << "draft trees (scratch slots)";
  for (int32_t g = 0; g < bs; g += capacity_) {
    const std::span<const TreeRequest> group =
        requests.subspan(static_cast<size_t>(g), static_cast<size_t>(std::min(capacity_, bs - g)));
    const auto n = static_cast<int32_t>(group.size());
    const int32_t bucket = graph_rows(n);
    const int32_t rows = bucket > 0 ? bucket : n;
    if (steps_ > 0) {
      ints_.upload(0, fill(group, g, rows));
      floats_.upload(scores_at(0), int64_t{rows} * k_);
      if (bucket > 0) {
#ifdef SGL_WITH_CUDA
        // The draft's backends plan nothing for decode passes, so the first step's batch is all
        // a replay needs to prepare.
        draft_.attention().prepare_replay(step_batch(0, rows, list_capacity_));
        graphs_->by_rows.at(rows).replay(draft_.target().stream());
#endif
      } else {
        int32_t longest = 1;
        for (const TreeRequest& r : group) longest = std::max(longest, r.prefix_len + steps_);
        enqueue(rows, longest, /*plan=*/true);
      }
    }
    for (speculative::DraftTree& t : build(group)) trees.push_back(std::move(t));
  }
  return trees;
}

int32_t EagleTree::graph_rows(int32_t bs) const {
#ifdef SGL_WITH_CUDA
  const auto it = std::lower_bound(graphs_->buckets.begin(), graphs_->buckets.end(), bs);
  if (it != graphs_->buckets.end()) return *it;
#endif
  (void)bs;
  return 0;
}

void EagleTree::capture_graphs() {
#ifdef SGL_WITH_CUDA
  const ModelRunnerOptions& o = draft_.target().options();
  if (o.device.is_cpu() || o.disable_cuda_graph || steps_ < 1) return;
  const auto max_rows =
      static_cast<int32_t>(std::min<int64_t>(o.cuda_graph_max_bs / k_, capacity_));
  if (max_rows < 1) return;
  const auto start = std::chrono::steady_clock::now();
  const backend::Stream stream = draft_.target().stream();
  std::vector<int32_t> buckets = cuda_graph_batch_sizes(max_rows);
  std::vector<int> branch_buckets;
  for (int32_t b : buckets) branch_buckets.push_back(b * k_);
  draft_.attention().init_graph_capture(branch_buckets, list_capacity_);
  for (auto b = buckets.rbegin(); b != buckets.rend(); ++b) {
    // Every row padding: one eager run, then the capture, largest bucket first.
    ints_.upload(0, fill({}, 0, *b));
    floats_.upload(scores_at(0), int64_t{*b} * k_);
    for (int32_t t = 0; t < steps_; ++t) {
      draft_.attention().plan(step_batch(t, *b, list_capacity_));
    }
    draft_.attention().prepare_capture(step_batch(0, *b, list_capacity_));
    enqueue(*b, list_capacity_, /*plan=*/false);
    backend::synchronize(stream);
    graphs_->by_rows.emplace(*b, backend::CudaGraph::capture(
                                     stream, [&] { enqueue(*b, list_capacity_, /*plan=*/false); }));
  }
  backend::synchronize(stream);
  graphs_->buckets = std::move(buckets);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  SGL_LOG_INFO << "captured " << graphs_->by_rows.size() << " EAGLE tree CUDA graphs (batch 1.."
               << graphs_->buckets.back() << ", " << steps_ << " steps of " << k_
               << " branches) in " << took.count() << " s";
#endif
}

}  // namespace sgl::runner
