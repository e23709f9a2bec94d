// One draft pass's batch over arrays at fixed offsets of a runner's static i32 buffer (EagleChain,
// EagleTree): the device copy the pass reads (the host's own on the CPU), the host copy for the
// host mirrors, so a pass captured in a CUDA graph replays over whatever the host fills there.
#pragma once

#include <cstdint>

#include "cache/req_to_token_table.h"
#include "core/tensor.h"
#include "forward/forward_batch.h"

namespace sgl::runner {

// Where one pass's arrays start in the buffer.
struct StaticPassArrays {
  int64_t ids, positions, slots;               // [rows * tokens_each]
  int64_t seq_lens, prefix_lens, extend_lens;  // [rows]
  int64_t req_rows;                            // [rows]: each row's req_to_token row
  int64_t qo_indptr, kv_indptr;                // [rows + 1]
  int64_t kv_indices;                          // [kv_capacity]
  int64_t kv_capacity;
};

// `device` i32: the buffer as the pass reads it; `host`: the same filled by the host.
ForwardBatch static_pass_batch(ForwardMode mode, const Tensor& device, const int32_t* host,
                               const StaticPassArrays& at, int32_t rows, int32_t tokens_each,
                               int32_t max_seq_len, const cache::ReqToTokenTable& req_to_token);

}  // namespace sgl::runner
