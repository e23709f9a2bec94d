// Paged GPU ForwardBatches for attention tests: requests with a cached prefix and new tokens,
// KV slots in shuffled (non-contiguous) order, laid out as ForwardBatchBuilder does on GPUs.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "core/buffer.h"
#include "forward/forward_batch.h"

namespace sgl::attention::test {

struct RequestLens {
  int32_t prefix = 0;  // tokens already in the KV cache
  int32_t extend = 0;  // new tokens this pass
};

// The host arrays of one batch.
struct HostBatch {
  ForwardMode mode = ForwardMode::kExtend;
  std::vector<int32_t> qo_indptr{0};      // [bs + 1]
  std::vector<int32_t> prefix_lens;       // [bs]
  std::vector<int32_t> extend_lens;       // [bs]
  std::vector<int32_t> seq_lens;          // [bs]
  std::vector<int32_t> kv_indptr{0};      // [bs + 1]
  std::vector<int32_t> kv_indices;        // [sum(seq_lens)]
  std::vector<int32_t> out_cache_loc;     // [T]
  std::vector<int32_t> positions;         // [T]
  std::vector<int32_t> req_pool_indices;  // [bs]
  std::vector<uint64_t> tree_mask;        // [T] (ForwardBatch::tree_mask) or empty: causal
  int32_t num_tokens() const { return qo_indptr.back(); }
  int32_t batch_size() const { return static_cast<int32_t>(prefix_lens.size()); }
};

// New tokens get distinct slots from a shuffled order of 1..num_slots-1 (slot 0 is reserved);
// each request's prefix is a window of the remaining shuffled slots at a random offset, so
// windows of different requests may overlap, as shared prefixes do.
inline HostBatch make_host_batch(ForwardMode mode, const std::vector<RequestLens>& requests,
                                 int64_t num_slots, std::mt19937& rng) {
  HostBatch h;
  h.mode = mode;
  std::vector<int32_t> order(num_slots - 1);
  std::iota(order.begin(), order.end(), 1);
  std::shuffle(order.begin(), order.end(), rng);
  int64_t new_tokens = 0;
  for (const RequestLens& r : requests) new_tokens += r.extend;
  const int64_t window = num_slots - 1 - new_tokens;
  SGL_CHECK(window > 0) << "pool too small for the batch";
  int64_t next_new = 0;
  for (size_t b = 0; b < requests.size(); ++b) {
    const RequestLens& r = requests[b];
    h.prefix_lens.push_back(r.prefix);
    h.extend_lens.push_back(r.extend);
    h.seq_lens.push_back(r.prefix + r.extend);
    h.qo_indptr.push_back(h.qo_indptr.back() + r.extend);
    h.req_pool_indices.push_back(static_cast<int32_t>(b));
    const int64_t offset = std::uniform_int_distribution<int64_t>(0, window - 1)(rng);
    for (int32_t j = 0; j < r.prefix; ++j) {
      h.kv_indices.push_back(order[new_tokens + (offset + j) % window]);
    }
    for (int32_t i = 0; i < r.extend; ++i) {
      h.out_cache_loc.push_back(order[next_new++]);
      h.kv_indices.push_back(h.out_cache_loc.back());
      h.positions.push_back(r.prefix + i);
    }
    h.kv_indptr.push_back(static_cast<int32_t>(h.kv_indices.size()));
  }
  return h;
}

// Device copies of a HostBatch and the ForwardBatch viewing them (host spans point into the
// HostBatch copy kept here). The buffers keep their addresses across rewrite(), as the
// builder's staging buffers do for CUDA graph replays.
class DeviceBatch {
 public:
  // kv_capacity: room for at least this many kv_indices (for later rewrites).
  DeviceBatch(HostBatch host, Allocator& gpu, cudaStream_t stream, int64_t kv_capacity = 0)
      : stream_(stream) {
    const int64_t bs = host.batch_size(), tokens = host.num_tokens();
    const int64_t kv = std::max<int64_t>(kv_capacity, static_cast<int64_t>(host.kv_indices.size()));
    for (int64_t n : {tokens, tokens, bs, bs, bs, bs + 1, bs + 1, kv, tokens, bs}) {
      buffers_.emplace_back(gpu, DType::kI32,
                            std::initializer_list<int64_t>{std::max<int64_t>(n, 1)});
    }
    tree_mask_ = Buffer(gpu, DType::kI64, {std::max<int64_t>(tokens, 1)});
    rewrite(std::move(host));
  }
  DeviceBatch(const DeviceBatch&) = delete;
  DeviceBatch& operator=(const DeviceBatch&) = delete;

  // Uploads another batch (same batch size and token count) into the same device buffers.
  void rewrite(HostBatch host) {
    host_ = std::move(host);
    // input_ids reuse the positions (attention never reads them).
    const std::vector<int32_t>* sources[] = {
        &host_.positions,     &host_.positions,       &host_.seq_lens,  &host_.prefix_lens,
        &host_.extend_lens,   &host_.qo_indptr,       &host_.kv_indptr, &host_.kv_indices,
        &host_.out_cache_loc, &host_.req_pool_indices};
    Tensor* views[] = {&fb_.input_ids,          &fb_.positions,       &fb_.seq_lens,
                       &fb_.extend_prefix_lens, &fb_.extend_seq_lens, &fb_.qo_indptr,
                       &fb_.kv_indptr,          &fb_.kv_indices,      &fb_.out_cache_loc,
                       &fb_.req_pool_indices};
    for (size_t i = 0; i < std::size(views); ++i) {
      const auto n = static_cast<int64_t>(sources[i]->size());
      SGL_CHECK_LE(n, buffers_[i].tensor().size(0)) << "rewrite needs the same shape";
      SGL_CUDA_CHECK(cudaMemcpyAsync(buffers_[i].tensor().raw(), sources[i]->data(),
                                     n * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
      *views[i] = buffers_[i].tensor().slice_rows(0, n);
    }
    fb_.tree_mask = Tensor();
    fb_.tree_mask_host = {};
    if (!host_.tree_mask.empty()) {
      const auto n = static_cast<int64_t>(host_.tree_mask.size());
      SGL_CHECK_LE(n, tree_mask_.tensor().size(0)) << "rewrite needs the same shape";
      SGL_CUDA_CHECK(cudaMemcpyAsync(tree_mask_.tensor().raw(), host_.tree_mask.data(),
                                     n * sizeof(uint64_t), cudaMemcpyHostToDevice, stream_));
      fb_.tree_mask = tree_mask_.tensor().slice_rows(0, n);
      fb_.tree_mask_host = host_.tree_mask;
    }
    SGL_CUDA_CHECK(cudaStreamSynchronize(stream_));
    fb_.mode = host_.mode;
    fb_.batch_size = host_.batch_size();
    fb_.num_tokens = host_.num_tokens();
    fb_.max_seq_len = *std::max_element(host_.seq_lens.begin(), host_.seq_lens.end());
    fb_.seq_lens_host = host_.seq_lens;
    fb_.extend_prefix_lens_host = host_.prefix_lens;
    fb_.extend_seq_lens_host = host_.extend_lens;
    fb_.qo_indptr_host = host_.qo_indptr;
    fb_.req_pool_indices_host = host_.req_pool_indices;
  }

  const ForwardBatch& fb() const { return fb_; }
  const HostBatch& host() const { return host_; }

 private:
  cudaStream_t stream_;
  HostBatch host_;
  std::vector<Buffer> buffers_;  // i32, one per ForwardBatch index tensor
  Buffer tree_mask_;             // i64 [T]
  ForwardBatch fb_;
};

}  // namespace sgl::attention::test
