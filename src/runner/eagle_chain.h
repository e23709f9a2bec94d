// EagleChain: the draft passes of EAGLE chains (--speculative-eagle-topk 1) with their ids kept
// on the device: each step's greedy id is the next step's input, so no step waits on the host
// and one copy brings a batch's drafts back. Two entries:
//   - draft(): before a verify pass, from each request's draft state (current after a prefill
//     or a plain decode); the steps store their K/V at the verify pass's own slots;
//   - extend_and_draft(): right behind a verify pass of T tokens a request, SGLang's draft
//     extend over all T positions (those past each accepted path compute K/V nobody reads),
//     then the next chain from each accepted path's end, its K/V in scratch slots. Nothing
//     waits: each request's accept count is computed on the device (eagle_chain_accept.h),
//     and the drafts stay there for the next verify (draft_ids()) and come back to the host
//     meanwhile (take_drafts()).
// On the GPU each shape replays a CUDA graph (captured at start, like the decode graphs); on
// the CPU, with graphs disabled and past the largest bucket, the same work runs eagerly.
// Counts, for --speculative-num-steps S: a chain has up to S drafts; draft 1 needs no step
// (it is the state's, or the draft extend's), so up to S - 1 steps (max_steps_); a verify
// checks its last token and its drafts, up to S + 1 tokens (max_tokens_).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/stream_event.h"
#include "cache/req_to_token_table.h"
#include "core/buffer.h"
#include "forward/forward_batch.h"
#include "runner/eagle_draft_runner.h"
#include "runner/static_pass_arrays.h"

namespace sgl::runner {

// One request of a chain: its last token at position prefix_len, then `drafts` drafts. Draft 1
// comes first (the draft state's, or the draft extend's); draft j + 1 from step j (1 <= j <
// drafts), which reads draft j at position prefix_len + j - 1 and stores its K/V at that
// position's slot.
struct ChainRequest {
  int32_t req_pool_idx = 0;  // its draft state's row (and its req_to_token row)
  int32_t prefix_len = 0;
  int32_t drafts = 0;  // >= 1
  // Its KV slots of positions [0, prefix_len + drafts - 1), or of [0, prefix_len) when the steps
  // store at scratch slots.
  std::span<const int32_t> kv_slots;
  // >= 0: step j stores its K/V at draft-pool slot scratch_base + j - 1 (a chain drafted ahead
  // of its verify, whose slots do not exist yet).
  int32_t scratch_base = -1;
};

// One request of a verify pass of `tokens` tokens a request, at positions [prefix_len,
// prefix_len + tokens).
struct VerifiedRequest {
  int32_t req_pool_idx = 0;
  int32_t prefix_len = 0;
  std::span<const int32_t> kv_slots;  // [prefix_len + tokens]: the table row, the verify's slots
};

// A verify pass's ids where they are (the device's, or the host's on the CPU), i32 [bs * tokens]
// each, request after request: what decides each request's accept count.
struct VerifyIds {
  Tensor input_ids;  // its last token and drafts; drafts may be sampled_id_ref()s into id_table
  Tensor id_table;   // undefined when no input is a reference
  // The id sampled at each position: position prefix_len + i of the draft extend reads
  // sampled[i], the token after it (the accepted drafts, then the bonus token, then ids nobody
  // keeps).
  Tensor sampled;
  int32_t forced_accept = 0;  // sgl-bench's --speculative-bench-accept-length (0: off)
};

// The drafts extend_and_draft() computed for a request whose next verify has its last token at
// `prefix_len` (the verified path's end): num_steps of them, a chain's longest.
struct PendingDrafts {
  int32_t req_pool_idx = 0;
  int32_t prefix_len = 0;
  std::vector<int32_t> drafts;
};

class EagleChain {
 public:
  // first_drafts (i32 [max_reqs, 1]: each request row's first draft, a target id) and
  // hidden_states ([max_reqs, H]: the draft's hidden state after it) are the worker's draft
  // state; their addresses go into the graphs. Chains of up to draft.num_steps() drafts and
  // verify passes of up to num_steps + 1 tokens, max_bs requests; graphs unless the target's
  // options disable them (GPU only).
  EagleChain(EagleDraftRunner& draft, const cache::ReqToTokenTable& req_to_token,
             const Tensor& first_drafts, const Tensor& hidden_states, int32_t max_bs);
  ~EagleChain();

  // Each request's drafts (its `drafts` of them), as target ids, from its draft state. Waits.
  std::vector<std::vector<int32_t>> draft(std::span<const ChainRequest> requests);

  // Behind a verify pass: the draft extend over every token of it (target_hidden [bs * tokens,
  // W], the pass's rows in order) and the next num_steps drafts of each request, queued; the
  // draft state of each request is left at its accepted path's end. A pending batch of drafts
  // not taken is dropped.
  void extend_and_draft(std::span<const VerifiedRequest> requests, int32_t tokens,
                        const Tensor& target_hidden, const VerifyIds& ids);
  // The accept count of each request of the last extend_and_draft() (as the host counted it
  // once the verify's ids came back): where its pending drafts start.
  void set_accepted(std::span<const int32_t> accepted);
  // The row of the pending drafts for a verify of `req_pool_idx` with its last token at
  // `prefix_len`, or -1 (none, or set_accepted() not called yet).
  int32_t pending_row(int32_t req_pool_idx, int32_t prefix_len) const;
  // i32 [num_steps * capacity]: where the pending drafts are: draft k of pending row b at
  // draft_id_index(b, k), valid for work queued before the next chain.
  Tensor draft_ids() const;
  int64_t draft_id_index(int32_t row, int32_t k) const { return int64_t{k} * capacity_ + row; }
  // The latest extend_and_draft()'s drafts (waiting for them), once; empty when none. Their
  // prefix_len is -1 until set_accepted().
  std::vector<PendingDrafts> take_drafts();

 private:
  struct Graphs;  // GPU: the captured graphs

  // Offsets into the static i32 arrays (host staging and device alike).
  int64_t step_at(int32_t array, int32_t step) const;  // array 0..3, step 1..max_steps_
  int64_t ones_at() const;
  int64_t qo_indptr_at() const;
  int64_t kv_indptr_at() const;
  int64_t kv_indices_at() const;
  // Each pass's KV index list: capacity rows of up to the context length.
  int64_t kv_capacity() const { return int64_t{capacity_} * max_context_len_; }
  int64_t ids_at(int32_t k) const;         // k = 0..max_steps_: draft k + 1 of every row
  int64_t extend_at(int32_t array) const;  // the draft extend's arrays, 0..9

  // Fill the host arrays of `requests`' chain (padded to `rows` rows and `steps` steps) or of
  // a draft extend of `tokens` tokens a request; each returns the i32 count from its first
  // array that goes to the device.
  int64_t fill_chain(std::span<const ChainRequest> requests, int32_t rows, int32_t steps);
  int64_t fill_extend(std::span<const VerifiedRequest> requests, int32_t rows, int32_t tokens);
  // Queues apply_chain_accept over the extend's bs rows (eagle_chain_accept.h), after the
  // uploads of fill_chain's and fill_extend's arrays.
  void apply_accept(int32_t bs, int32_t tokens, const VerifyIds& ids);
  void clear_pending();
  ForwardBatch pass_batch(ForwardMode mode, const StaticPassArrays& at, int32_t rows,
                          int32_t tokens_each, int32_t max_seq_len) const;
  // The batch of chain step `step` over the first `rows` rows, and of the draft extend;
  // max_seq_len an upper bound.
  ForwardBatch step_batch(int32_t step, int32_t rows, int32_t max_seq_len) const;
  ForwardBatch extend_batch(int32_t rows, int32_t tokens, int32_t max_seq_len) const;
  // Queue the chain's first drafts and hidden inputs (from the draft state, or from a draft
  // extend of `tokens` tokens a request when tokens > 0), then `steps` steps, over the first
  // `rows` rows. plan: plan the attention of each pass (a capture plans beforehand).
  void enqueue(int32_t rows, int32_t tokens, int32_t steps, int32_t max_seq_len, bool plan);
  // The rows of the graph for bs requests of this shape, or 0 where none was captured.
  int32_t graph_rows(int32_t bs, int32_t tokens, int32_t steps) const;
  void replay(int32_t rows, int32_t tokens, int32_t steps);  // a captured shape
  void capture_graphs();
  Tensor view_2d(int64_t at, int64_t rows, int64_t cols) const;

  EagleDraftRunner& draft_;
  const cache::ReqToTokenTable& req_to_token_;
  Tensor first_drafts_;
  Tensor hidden_states_;
  int32_t capacity_;    // rows of every per-row array
  int32_t max_steps_;   // draft.num_steps() - 1
  int32_t max_tokens_;  // draft.num_steps() + 1: a verify's longest
  int32_t max_context_len_;
  StaticArrays arrays_;   // i32, at the offsets above
  Buffer step_hidden_;    // [capacity, H]: step 1's hidden input from the draft state
  Buffer first_hidden_;   // [capacity, H]: the draft extend's rows
  Buffer extend_hidden_;  // [capacity * max_tokens, W]: its input
  // The pending drafts of extend_and_draft, and the end of its queued work: its uploads read
  // the host arrays, its last copy writes the drafts there.
  std::vector<PendingDrafts> pending_;
  std::vector<int32_t> pending_verify_prefix_;  // the verify's prefix_len of each pending row
  std::vector<int32_t> pending_row_of_;         // by request row: its pending row, or -1
  backend::StreamEvent pending_copied_;
  std::unique_ptr<Graphs> graphs_;
};

}  // namespace sgl::runner
