// Copies a decode batch's device metadata into a CUDA graph's static inputs, padding the rows
// past the real batch with a dummy request (one token at position 0, KV slot 0, seq_len 1).
#pragma once

#include <cstdint>

#include "backend/stream.h"

namespace sgl::runner::cuda {

// Device i32 arrays of one decode batch (page size 1: one new token per request).
struct DecodeArrays {
  int32_t* input_ids = nullptr;         // [bs]
  int32_t* positions = nullptr;         // [bs]
  int32_t* out_cache_loc = nullptr;     // [bs]
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
// sampling on the device; may be null when src has no such ids).
void pack_decode_inputs(const DecodeArrays& src, int32_t bs, int32_t num_kv,
                        const DecodeArrays& dst, int32_t padded_bs, const int32_t* sampled,
                        backend::Stream stream);

}  // namespace sgl::runner::cuda
