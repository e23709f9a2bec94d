// ForwardBatchBuilder: the one host -> device translation point from scheduled requests to a
// ForwardBatch, writing into fixed-address staging buffers sized for the largest batch.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/stream.h"
#include "backend/stream_event.h"
#include "cache/req_to_token_table.h"
#include "core/allocator.h"
#include "core/buffer.h"
#include "forward/forward_batch.h"

namespace sgl::runner {

// One request's part of a batch, as the scheduler decided it.
struct BatchRequest {
  int32_t req_pool_idx = 0;
  int32_t prefix_len = 0;                  // tokens already in the KV cache
  std::span<const int32_t> input_ids;      // new tokens this pass
  std::span<const int32_t> out_cache_loc;  // their KV slots (same length as input_ids)
  // EAGLE tree drafts; each empty by default. Positions of the new tokens (default prefix_len +
  // i); each new token's tree mask row (ForwardBatch::tree_mask; default causal); the request's
  // KV slots, all prefix_len + input_ids.size() of them, instead of its req_to_token row (a
  // draft step over one branch of a tree, a draft extend over an accepted path).
  std::span<const int32_t> positions = {};
  std::span<const uint64_t> tree_mask = {};
  std::span<const int32_t> kv_slots = {};
};

class ForwardBatchBuilder {
 public:
  // Staging for up to `max_num_tokens` tokens and `max_batch_size` requests on `allocator`'s
  // device. The builder borrows `req_to_token`, which the batches view (CPU) or whose rows it
  // gathers into kv_indices (GPU): it must not change while a batch built over it runs.
  ForwardBatchBuilder(Allocator& allocator, int64_t max_num_tokens, int64_t max_batch_size,
                      const cache::ReqToTokenTable& req_to_token);
  ~ForwardBatchBuilder();

  // The returned views stay valid until the next build(). Requests must already have their
  // new slots written into the table. Input ids may be sampled_id_ref()s.
  // The device arrays are rewritten in `stream` order, so the next batch may be built while
  // this one runs when both use one stream.
  ForwardBatch build(ForwardMode mode, LogitsMode logits_mode,
                     std::span<const BatchRequest> requests, backend::Stream stream);

 private:
  int64_t max_num_tokens_;
  int64_t max_batch_size_;
  const cache::ReqToTokenTable& req_to_token_;
  // Host staging (CPU batches view these directly).
  std::vector<int32_t> input_ids_, positions_, out_cache_loc_;
  std::vector<int32_t> seq_lens_, prefix_lens_, extend_lens_, qo_indptr_, req_pool_indices_;
  std::vector<int32_t> kv_indptr_, kv_indices_;
  std::vector<uint64_t> tree_mask_;
  // GPU: every array above packed into one pinned host buffer, uploaded in one copy.
  Device device_;
  std::unique_ptr<Allocator> pinned_allocator_;
  Buffer pinned_;                  // i32 [capacity]
  Buffer device_ints_;             // i32 [capacity] on the GPU
  backend::StreamEvent uploaded_;  // the latest upload from pinned_
};

}  // namespace sgl::runner
