// Copies a batch's device metadata into a CUDA graph's static inputs: `tokens` new tokens per
// request (a decode: 1; a speculative verify: the last token and its drafts). Rows past the
// real batch become dummy requests (tokens at positions 0..tokens-1, every one written to and
// reading only KV slot 0, seq_len = tokens), whose outputs nobody reads.
#pragma once

#include <cstdint>

#include "backend/stream.h"

namespace sgl::runner::cuda {

// Device arrays of one batch whose requests all have `tokens` new tokens (page size 1).
struct GraphInputArrays {
  int32_t* input_ids = nullptr;         // [bs * tokens]
  int32_t* positions = nullptr;         // [bs * tokens]
  int32_t* out_cache_loc = nullptr;     // [bs * tokens]
  uint64_t* tree_mask = nullptr;        // [bs * tokens] or null (ForwardBatch::tree_mask)
  int32_t* seq_lens = nullptr;          // [bs]
  int32_t* prefix_lens = nullptr;       // [bs]
  int32_t* extend_lens = nullptr;       // [bs]
  int32_t* qo_indptr = nullptr;         // [bs + 1]
  int32_t* req_pool_indices = nullptr;  // [bs]
  int32_t* kv_indptr = nullptr;         // [bs + 1]
  int32_t* kv_indices = nullptr;        // [sum(seq_lens)]
};

// dst (sized for `padded_bs` requests) <- src (bs requests, num_kv KV entries), in one launch.
// Input ids that are sampled_id_ref(row) become sampled[row] (sampled: the ids of the latest
// sampling on the device; may be null when src has no such ids). When dst has a tree mask and
// src none, dst's rows are causal (token i of a request sees its new tokens 0..i).
void pack_graph_inputs(const GraphInputArrays& src, int32_t bs, int32_t num_kv,
                       const GraphInputArrays& dst, int32_t padded_bs, int32_t tokens,
                       const int32_t* sampled, backend::Stream stream);

}  // namespace sgl::runner::cuda
