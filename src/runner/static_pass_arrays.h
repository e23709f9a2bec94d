// A draft runner's static arrays (EagleChain, EagleTree) and one draft pass's batch over them.
// The host fills the arrays (pinned memory on a GPU) and uploads them in ranges to a device copy
// the passes read (on the CPU they read the host's), so a pass captured in a CUDA graph replays
// over whatever the host filled there.
#pragma once

#include <cstdint>
#include <memory>

#include "cache/req_to_token_table.h"
#include "core/allocator.h"
#include "core/buffer.h"
#include "core/tensor.h"
#include "forward/forward_batch.h"
#include "runner/model_runner.h"

namespace sgl::runner {

class StaticArrays {
 public:
  // n values of `dtype` for passes on `target`'s device and stream.
  StaticArrays(ModelRunner& target, DType dtype, int64_t n);

  // Whether the passes read a device copy (a GPU), not the host's arrays (the CPU).
  bool on_device() const { return device_.tensor().defined(); }
  // [at, at + n) where the passes read it.
  Tensor view(int64_t at, int64_t n) const;
  // [at, at + n) of the host's arrays.
  Tensor host(int64_t at, int64_t n) const { return host_.tensor().slice_rows(at, n); }
  template <typename T>
  T* host_data() const {
    return host_.data<T>();
  }
  // Queue the host's [from, from + count) to the device copy, or the device copy's back to the
  // host (nothing on the CPU). The host must not touch that range until the copy is done.
  void upload(int64_t from, int64_t count);
  void download(int64_t from, int64_t count);

 private:
  backend::Stream stream_;
  std::unique_ptr<Allocator> staging_allocator_;  // GPU: pinned host memory
  Buffer host_;
  Buffer device_;  // CPU: undefined
};

// Where one pass's arrays start in a StaticArrays of i32.
struct StaticPassArrays {
  int64_t ids, positions, slots;               // [rows * tokens_each]
  int64_t seq_lens, prefix_lens, extend_lens;  // [rows]
  int64_t req_rows;                            // [rows]: each row's req_to_token row
  int64_t qo_indptr, kv_indptr;                // [rows + 1]
  int64_t kv_indices;                          // [kv_capacity]
  int64_t kv_capacity;
};

ForwardBatch static_pass_batch(ForwardMode mode, const StaticArrays& arrays,
                               const StaticPassArrays& at, int32_t rows, int32_t tokens_each,
                               int32_t max_seq_len, const cache::ReqToTokenTable& req_to_token);

}  // namespace sgl::runner
