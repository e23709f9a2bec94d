// StaticArrays and static_pass_batch.
#include "runner/static_pass_arrays.h"

#include <span>

#include "backend/backend.h"
#include "kernels/copy.h"

namespace sgl::runner {

StaticArrays::StaticArrays(ModelRunner& target, DType dtype, int64_t n) : stream_(target.stream()) {
  if (target.options().device.is_cpu()) {
    host_ = Buffer(target.allocator(), dtype, {n});
    return;
  }
  staging_allocator_ = backend::create_staging_allocator(target.options().device);
  host_ = Buffer(*staging_allocator_, dtype, {n});
  device_ = Buffer(target.allocator(), dtype, {n});
}

Tensor StaticArrays::view(int64_t at, int64_t n) const {
  return (on_device() ? device_ : host_).tensor().slice_rows(at, n);
}

void StaticArrays::upload(int64_t from, int64_t count) {
  if (!on_device() || count == 0) return;
  kernels::copy_async(host(from, count), device_.tensor().slice_rows(from, count), stream_);
}

void StaticArrays::download(int64_t from, int64_t count) {
  if (!on_device() || count == 0) return;
  kernels::copy_async(device_.tensor().slice_rows(from, count), host(from, count), stream_);
}

ForwardBatch static_pass_batch(ForwardMode mode, const StaticArrays& arrays,
                               const StaticPassArrays& at, int32_t rows, int32_t tokens_each,
                               int32_t max_seq_len, const cache::ReqToTokenTable& req_to_token) {
  const auto n = static_cast<size_t>(rows);
  const int64_t t = int64_t{rows} * tokens_each;
  const int32_t* host = arrays.host_data<int32_t>();
  ForwardBatch fb;
  fb.mode = mode;
  fb.logits_mode = LogitsMode::kLastPerRequest;  // a draft extend: each request's out row
  fb.batch_size = rows;
  fb.num_tokens = static_cast<int32_t>(t);
  fb.max_seq_len = max_seq_len;
  fb.input_ids = arrays.view(at.ids, t);
  fb.positions = arrays.view(at.positions, t);
  fb.out_cache_loc = arrays.view(at.slots, t);
  fb.seq_lens = arrays.view(at.seq_lens, rows);
  fb.extend_prefix_lens = arrays.view(at.prefix_lens, rows);
  fb.extend_seq_lens = arrays.view(at.extend_lens, rows);
  fb.qo_indptr = arrays.view(at.qo_indptr, rows + 1);
  fb.req_pool_indices = arrays.view(at.req_rows, rows);
  fb.kv_indptr = arrays.view(at.kv_indptr, rows + 1);
  fb.kv_indices = arrays.view(at.kv_indices, at.kv_capacity);
  fb.req_to_token = Tensor(const_cast<int32_t*>(req_to_token.data()), DType::kI32,
                           {req_to_token.size(), req_to_token.max_context_len()});
  // Host mirrors (the CPU attention reads them; a graph's are the padded capture's).
  fb.seq_lens_host = std::span(host + at.seq_lens, n);
  fb.extend_prefix_lens_host = std::span(host + at.prefix_lens, n);
  fb.extend_seq_lens_host = std::span(host + at.extend_lens, n);
  fb.qo_indptr_host = std::span(host + at.qo_indptr, n + 1);
  fb.req_pool_indices_host = std::span(host + at.req_rows, n);
  return fb;
}

}  // namespace sgl::runner
