// EagleWorker: EAGLE's steps around the target's forward passes (SGLang's EAGLEWorker). Before a
// verify pass it drafts each verifying request's tokens: a chain (--speculative-eagle-topk 1):
// the drafts its last verify left, or from the request's draft state by draft decode steps that
// store the draft's K/V at the verify pass's own slots (EagleChain: on the device, graphs on the
// GPU); a tree (topk > 1, speculative/draft_tree.h): the first draft distribution's top k, then
// draft steps over each request's k frontier nodes, each a branch attending to the prefix and its
// own ancestors, their K/V in the draft's scratch slots (EagleTree: on the device, graphs on the
// GPU).
// After every pass it extends the draft over the positions the pass kept (a prefill's, a
// decode's, a verify's accepted path), each with the target's hidden state there and the token
// that follows it, which overwrites the speculative draft K/V and leaves each request's next
// first draft (distribution) and the draft's hidden state. After a batch of chain verifies of
// one length, the extend covers every verified position and the next chain follows at once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "cache/req_to_token_table.h"
#include "core/buffer.h"
#include "model/model.h"
#include "runner/batch_executor.h"
#include "runner/draft_top_k.h"
#include "runner/eagle_chain.h"
#include "runner/eagle_draft_runner.h"
#include "runner/eagle_tree.h"
#include "runner/forward_batch_builder.h"
#include "speculative/draft_tree.h"

namespace sgl::runner {

class EagleWorker {
 public:
  // Borrows `draft` and `req_to_token` (the batch runner's table, current for each batch it
  // runs); state for `max_reqs` request rows.
  EagleWorker(EagleDraftRunner& draft, const cache::ReqToTokenTable& req_to_token,
              int32_t max_reqs);

  // [bs]: the drafts of each request of `batch` with sample_rows > 1 (sample_rows - 1 of them,
  // at the positions after its last token), empty for the others. A chain's trees hold tokens
  // only (no parents, no depths). Runs the draft steps, or (the usual chain verify) names the
  // drafts the last verify's chain left on the device: sampled_id_ref()s into draft_id_table(),
  // which the verify pass resolves on the device, so it queues behind that chain at once.
  std::vector<speculative::DraftTree> draft(const ExecBatch& batch);
  // Where draft()'s references point (undefined when it returned none).
  Tensor draft_id_table() const;
  // Replaces the references draft() returned for `batch` by their ids (waiting for the chain's
  // copy to the host); false, doing nothing, when it returned none.
  bool resolve_drafts(const ExecBatch& batch, std::vector<speculative::DraftTree>& drafts);

  // Right behind the target's verify pass over `batch` (or after it): when every request
  // verified a chain of one length, queues EagleChain::extend_and_draft (the draft extend over
  // every verified position and the next drafts, the accept counts taken from `ids` where they
  // are). False, having done nothing, for other batches.
  bool queue_extend_and_draft(const ExecBatch& batch, const model::ModelOutput& target,
                              const VerifyIds& ids);
  // After the target's pass over `batch`: `input_ids` [num_tokens] the pass read (drafts filled
  // in), `target` its output with every token's hidden states, `sampled` every sampled row's id
  // (request after request), `drafts` what draft() returned for it (resolved), `queued` what
  // queue_extend_and_draft() returned for it.
  void extend(const ExecBatch& batch, std::span<const int32_t> input_ids,
              const model::ModelOutput& target, std::span<const int32_t> sampled,
              const std::vector<speculative::DraftTree>& drafts, bool queued);

 private:
  std::vector<std::vector<int32_t>> draft_chain(const ExecBatch& batch);
  // Moves the drafts the last chain verify left into next_drafts_.
  void take_pending_drafts();
  // The target's hidden states a draft extend reads (the captured layers', for EAGLE-3).
  const Tensor& draft_input(const model::ModelOutput& target) const;
  std::vector<speculative::DraftTree> draft_tree(const ExecBatch& batch);
  // The draft extend over `requests`' kept positions; hidden_in [tokens, W]. Writes each
  // request's output hidden row and its next first draft (a chain's argmax, on the device; a
  // tree's top k, on the host) into its state.
  void extend_kept(std::span<const BatchRequest> requests, const Tensor& hidden_in);
  // Device i32 copy of `values` in `buffer` (at most its size).
  Tensor upload(std::span<const int32_t> values, const Buffer& buffer);

  EagleDraftRunner& draft_;
  const cache::ReqToTokenTable& req_to_token_;
  int32_t topk_;
  ForwardBatchBuilder builder_;
  int64_t hidden_size_;
  // Per request row: the draft's last hidden state and (chains) its next first draft, a target
  // id; a draft pass writes them on the device.
  Buffer hidden_state_;  // [max_reqs, H], the compute dtype
  Buffer first_draft_;   // i32 [max_reqs, 1]
  Buffer greedy_ids_;    // i32 [max_batch_size, 1]: a pass's first drafts before the scatter
  std::unique_ptr<EagleChain> chain_;  // chains' draft steps
  // Chains: per request row, the drafts the last verify's draft extend left for its next
  // verify, whose last token sits at prefix_len (-1: none).
  struct NextDrafts {
    int32_t prefix_len = -1;
    std::vector<int32_t> drafts;
  };
  std::vector<NextDrafts> next_drafts_;  // [max_reqs]
  // draft()'s requests whose drafts are references: (request index, pending row).
  std::vector<std::pair<size_t, int32_t>> referenced_;
  Buffer extend_hidden_;  // [max_num_tokens, W]: the kept rows of the target's
  Buffer gather_rows_;    // i32 [max_num_tokens]
  Buffer scatter_rows_;   // i32 [max_batch_size]
  // Trees: per request row, the next first draft distribution's top k (a draft extend's); the
  // draft steps.
  std::vector<std::vector<speculative::TokenLogprob>> next_top_;  // [max_reqs][topk]
  std::unique_ptr<DraftTopK> top_k_;
  std::unique_ptr<EagleTree> tree_;
};

}  // namespace sgl::runner
