// EagleChain: the draft steps of EAGLE chains (--speculative-eagle-topk 1) with their ids kept
// on the device. Each step's greedy id is the next step's input, so no step waits on the host
// and one copy brings a batch's drafts back. On the GPU a batch replays one CUDA graph per
// bucket and step count (captured at start, like the decode graphs); on the CPU, with graphs
// disabled and past the largest bucket, the same steps run eagerly.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cache/req_to_token_table.h"
#include "core/allocator.h"
#include "core/buffer.h"
#include "forward/forward_batch.h"
#include "runner/eagle_draft_runner.h"

namespace sgl::runner {

// One verifying request of a chain: its last token at position prefix_len, then `drafts`
// drafts. Draft 1 is its draft state's; draft j + 1 comes from step j (1 <= j < drafts), which
// reads draft j at position prefix_len + j - 1 and stores its K/V at that position's slot.
struct ChainRequest {
  int32_t req_pool_idx = 0;  // its draft state's row (and its req_to_token row)
  int32_t prefix_len = 0;
  int32_t drafts = 0;  // >= 1
  // Its KV slots of positions [0, prefix_len + drafts - 1): the table row with the verify's.
  std::span<const int32_t> kv_slots;
};

class EagleChain {
 public:
  // first_drafts (i32 [max_reqs, 1]: each request row's first draft, a target id) and
  // hidden_states ([max_reqs, H]: the draft's hidden state after it) are the worker's draft
  // state; their addresses go into the graphs. Chains of up to draft.num_steps() drafts and
  // max_bs requests; graphs unless the target's options disable them (GPU only).
  EagleChain(EagleDraftRunner& draft, const cache::ReqToTokenTable& req_to_token,
             const Tensor& first_drafts, const Tensor& hidden_states, int32_t max_bs);
  ~EagleChain();

  // Each request's drafts (its `drafts` of them), as target ids. Waits for them.
  std::vector<std::vector<int32_t>> run(std::span<const ChainRequest> requests);

 private:
  struct Graphs;  // GPU: the captured graphs

  // Offsets into the static i32 arrays (host staging and device alike).
  int64_t rows_at() const { return 0; }
  int64_t step_at(int32_t array, int32_t step) const;  // array 0..3, step 1..max_steps_
  int64_t ones_at() const;
  int64_t qo_indptr_at() const;
  int64_t kv_indptr_at() const;
  int64_t kv_indices_at() const;
  int64_t ids_at(int32_t k) const;  // k = 0..max_steps_: draft k + 1 of every row
  int64_t draft_ids_at() const;

  // Fills the host arrays for `requests` padded to `rows` rows and `steps` steps; returns how
  // many leading i32 go to the device.
  int64_t fill(std::span<const ChainRequest> requests, int32_t rows, int32_t steps);
  // The batch of step `step` over the first `rows` rows; max_seq_len an upper bound.
  ForwardBatch step_batch(int32_t step, int32_t rows, int32_t max_seq_len) const;
  // Queues the gather of the first drafts and hidden states, then `steps` draft steps, over the
  // first `rows` rows (plan: whether to plan the attention, which a capture does beforehand).
  void enqueue(int32_t rows, int32_t steps, int32_t max_seq_len, bool plan);
  Tensor device_view(int64_t at, int64_t n) const;

  EagleDraftRunner& draft_;
  const cache::ReqToTokenTable& req_to_token_;
  Tensor first_drafts_;
  Tensor hidden_states_;
  int32_t capacity_;   // rows of every per-row array
  int32_t max_steps_;  // draft.num_steps() - 1
  int32_t max_context_len_;
  std::unique_ptr<Allocator> staging_allocator_;  // GPU: pinned host memory
  Buffer host_;                                   // i32: the arrays as the host fills them
  Buffer device_;                                 // i32: the same on the device (CPU: unused)
  Buffer step_hidden_;                            // [capacity, H]: a step's hidden input
  std::unique_ptr<Graphs> graphs_;
};

}  // namespace sgl::runner
