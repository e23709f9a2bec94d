// EagleTree: the draft steps of EAGLE trees (--speculative-eagle-topk k > 1) without the host
// between them. Each step runs the draft over every request's k frontier branches at once, takes
// each branch's top k (DraftTopK) and picks the next frontier, the k best of the k x k children
// by path score (eagle_tree_select.h), on the device; the branches' K/V go to the draft pool's
// scratch slots and each branch attends to its request's prefix, its ancestors and itself. One
// copy brings every step's children back, and the host grows the same tree from them
// (DraftTreeBuilder, checking the device's frontier) and selects the verified nodes.
// On the GPU each bucket of requests replays one CUDA graph of all the steps (captured at start,
// like the decode graphs); on the CPU, and past the largest bucket, the same work runs eagerly.
// A step's pass has k rows a request, so the requests go in groups of max_batch_size / k (at
// least one), each group one replay (or, past the largest graph or on the CPU, an eager run).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cache/req_to_token_table.h"
#include "core/buffer.h"
#include "runner/draft_top_k.h"
#include "runner/eagle_draft_runner.h"
#include "runner/static_pass_arrays.h"
#include "speculative/draft_tree.h"

namespace sgl::runner {

// One request's tree: its verify's last token at position prefix_len (the draft's K/V of
// positions [0, prefix_len) at kv_slots), `first` the draft distribution's top k there (target
// ids), and the `nodes` best candidates to verify.
struct TreeRequest {
  int32_t req_pool_idx = 0;  // its draft state's row (the hidden state the first step reads)
  int32_t prefix_len = 0;
  std::span<const int32_t> kv_slots;
  std::span<const speculative::TokenLogprob> first;
  int32_t nodes = 0;
};

class EagleTree {
 public:
  // hidden_states: [max_reqs, H], the draft's hidden state of each request row (the worker's);
  // its address goes into the graphs. `top_k` (the worker's, for at least max(max_batch_size,
  // topk) rows) takes each step's top k; it must outlive this.
  EagleTree(EagleDraftRunner& draft, const cache::ReqToTokenTable& req_to_token,
            const Tensor& hidden_states, DraftTopK& top_k);
  ~EagleTree();

  // Each request's tree (at most the scratch slots' max_batch_size requests). Waits.
  std::vector<speculative::DraftTree> draft(std::span<const TreeRequest> requests);

 private:
  struct Graphs;  // GPU: the captured graphs

  // Offsets into the static i32 arrays (host staging and device alike); t: step 0..steps_-1.
  int64_t step_at(int32_t array, int32_t t) const;  // per-branch arrays of each step
  int64_t row_at(int32_t array) const;              // per-request-row arrays
  int64_t ones_at() const;
  int64_t qo_indptr_at() const;
  int64_t kv_indptr_at() const;
  int64_t kv_indices_at() const;
  // Each step's KV index lists: a list of list_capacity_ per branch.
  int64_t kv_capacity() const { return int64_t{branches_} * list_capacity_; }
  // The f32 arrays: each step's frontier scores [steps][capacity * k], then the children's
  // log-probs [steps][capacity * k * k].
  int64_t scores_at(int32_t t) const;
  int64_t child_logprobs_at(int32_t t) const;
  // The children's ids [steps][capacity * k * k], then which child each frontier node is
  // [steps][capacity * k]: one copy back.
  int64_t child_ids_at(int32_t t) const;
  int64_t children_at(int32_t t) const;

  // Fills the host arrays of `requests` (the first_request-th of the draft on), padded to `rows`
  // rows; returns the i32 count from 0 that goes to the device.
  int64_t fill(std::span<const TreeRequest> requests, int32_t first_request, int32_t rows);
  ForwardBatch step_batch(int32_t t, int32_t rows, int32_t max_seq_len) const;
  // Queue every step over the first `rows` rows; plan: plan each pass's attention (a capture
  // plans beforehand).
  void enqueue(int32_t rows, int32_t max_seq_len, bool plan);
  void select(int32_t t, int32_t rows);
  // The trees of `requests` from the children copied back.
  std::vector<speculative::DraftTree> build(std::span<const TreeRequest> requests);
  // The rows of the graph for bs requests, or 0 where none was captured.
  int32_t graph_rows(int32_t bs) const;
  void capture_graphs();

  EagleDraftRunner& draft_;
  const cache::ReqToTokenTable& req_to_token_;
  Tensor hidden_states_;
  int32_t k_;
  int32_t steps_;          // draft.num_steps() - 1: the steps after the first distribution
  int32_t capacity_;       // request rows per group
  int32_t branches_;       // capacity_ * k_
  int32_t list_capacity_;  // a branch's KV list: the context, then its steps
  DraftTopK& top_k_;
  StaticArrays ints_;    // i32, at the offsets above
  StaticArrays floats_;  // f32, at scores_at / child_logprobs_at
  Buffer branch_in_;     // [branches, H]: a step's hidden inputs
  Buffer branch_out_;    // [branches, H]: its outputs
  std::unique_ptr<Graphs> graphs_;
};

}  // namespace sgl::runner
