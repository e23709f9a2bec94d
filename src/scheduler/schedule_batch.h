// ScheduleBatch: the host-side description of one forward pass, as the scheduler decided it.
#pragma once

#include <cstdint>
#include <vector>

#include "cache/req_to_token_table.h"
#include "forward/forward_mode.h"
#include "sampling/vocab_mask.h"
#include "scheduler/req.h"

namespace sgl::scheduler {

// One request's part of the batch.
struct BatchEntry {
  Req* req = nullptr;      // borrowed from the scheduler; valid while the batch is in flight
  int32_t prefix_len = 0;  // tokens already in the KV cache (row[0:prefix_len])
  int32_t extend_len = 0;  // new tokens this pass
  std::vector<int32_t> input_ids;  // [extend_len] when known on the host; empty for decode
  // False for a non-final prefill chunk (its token is dropped). In a pooling batch: this chunk
  // ends the prompt, so the request's embedding is complete with it.
  bool samples = true;
  // Prompt logprobs: the logits at positions [logprob_begin, logprob_begin + n) score these
  // prompt tokens (the one after each position). Empty: none in this pass.
  int32_t logprob_begin = 0;
  std::vector<int32_t> logprob_targets = {};
  // Speculative verify: input_ids are the last sampled token then these drafts (EAGLE:
  // placeholders until the batch's result brings the runner's drafts), and the last
  // 1 + draft_ids.size() positions are all sampled (one result row each); empty: one row.
  std::vector<int32_t> draft_ids = {};
  // EAGLE tree drafts (from the batch's result): node r + 1's parent node for each draft (a
  // verify over a tree, the drafts in its node order); empty: a chain.
  std::vector<int32_t> draft_parents = {};

  int32_t sample_rows() const { return 1 + static_cast<int32_t>(draft_ids.size()); }
  // A decode step (one token, or a verify of drafts), not a prompt's prefill.
  bool decodes() const { return input_ids.empty() || !draft_ids.empty(); }
};

struct ScheduleBatch {
  int64_t id = 0;
  ForwardMode mode = ForwardMode::kIdle;
  // An embedding model's prefill (SchedulerOptions::pooler): the model pools each entry's hidden
  // states instead of sampling (ForwardBatch::pooling).
  PoolingType pooling = PoolingType::kNone;
  std::vector<BatchEntry> entries;
  // [num_tokens()]: the KV slots of the new tokens, entry after entry (extend_len each). One
  // array for the batch, so a decode step allocates nothing per request.
  std::vector<int32_t> out_cache_loc;
  // Every req_to_token write the scheduler made since the batch before: the runner's copy of the
  // table takes them when this batch starts, so batches in flight never read the scheduler's.
  cache::ReqToTokenWrites req_to_token_writes;
  // The grammar masks of the entries whose requests are constrained (mask rows index
  // `entries`), set by the scheduler once the batch before is processed; invalid when none is.
  sampling::VocabMaskFuture vocab_mask;
  // EAGLE: a decode batch without drafts the draft head does not follow (no hidden states, no
  // draft extend), so it runs as fast as plain decoding; its requests' drafts go stale.
  bool skip_draft = false;

  int64_t num_tokens() const {
    int64_t n = 0;
    for (const auto& e : entries) n += e.extend_len;
    return n;
  }
};

}  // namespace sgl::scheduler
