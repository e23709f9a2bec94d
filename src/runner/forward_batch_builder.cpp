// ForwardBatch assembly.
#include "runner/forward_batch_builder.h"

#include <algorithm>

#include "backend/backend.h"
#include "kernels/copy.h"

namespace sgl::runner {

ForwardBatchBuilder::ForwardBatchBuilder(Allocator& allocator, int64_t max_num_tokens,
                                         int64_t max_batch_size,
                                         const cache::ReqToTokenTable& req_to_token)
    : max_num_tokens_(max_num_tokens),
      max_batch_size_(max_batch_size),
      req_to_token_(req_to_token),
      device_(allocator.device()) {
  input_ids_.reserve(max_num_tokens);
  positions_.reserve(max_num_tokens);
  out_cache_loc_.reserve(max_num_tokens);
  for (auto* v : {&seq_lens_, &prefix_lens_, &extend_lens_, &req_pool_indices_}) {
    v->reserve(max_batch_size);
  }
  qo_indptr_.reserve(max_batch_size + 1);
  if (device_.is_cpu()) return;
  // Tokens: ids, positions, slots, a tree mask (two ints each, aligned); requests: 5 arrays + 2
  // indptrs; kv_indices: every row.
  const int64_t capacity = 5 * max_num_tokens + 2 + 7 * (max_batch_size + 1) +
                           max_batch_size * static_cast<int64_t>(req_to_token.max_context_len());
  pinned_allocator_ = backend::create_staging_allocator(device_);
  pinned_ = Buffer(*pinned_allocator_, DType::kI32, {capacity});
  device_ints_ = Buffer(allocator, DType::kI32, {capacity});
}

ForwardBatchBuilder::~ForwardBatchBuilder() = default;

ForwardBatch ForwardBatchBuilder::build(ForwardMode mode, LogitsMode logits_mode,
                                        std::span<const BatchRequest> requests,
                                        backend::Stream stream) {
  const auto bs = static_cast<int64_t>(requests.size());
  SGL_CHECK(bs > 0 && bs <= max_batch_size_)
      << "batch of " << bs << " requests (max " << max_batch_size_ << ")";
  input_ids_.clear();
  positions_.clear();
  out_cache_loc_.clear();
  seq_lens_.clear();
  prefix_lens_.clear();
  extend_lens_.clear();
  req_pool_indices_.clear();
  qo_indptr_.assign(1, 0);
  tree_mask_.clear();
  int32_t max_seq_len = 0;
  bool masked = false, own_slots = false;
  for (const BatchRequest& r : requests) {
    masked = masked || !r.tree_mask.empty();
    own_slots = own_slots || !r.kv_slots.empty();
  }
  for (const BatchRequest& r : requests) {
    SGL_CHECK_EQ(r.input_ids.size(), r.out_cache_loc.size());
    SGL_CHECK(!r.input_ids.empty()) << "request with no new tokens";
    const auto n = static_cast<int32_t>(r.input_ids.size());
    SGL_CHECK_LE(static_cast<int64_t>(input_ids_.size()) + n, max_num_tokens_);
    input_ids_.insert(input_ids_.end(), r.input_ids.begin(), r.input_ids.end());
    out_cache_loc_.insert(out_cache_loc_.end(), r.out_cache_loc.begin(), r.out_cache_loc.end());
    if (r.positions.empty()) {
      for (int32_t i = 0; i < n; ++i) positions_.push_back(r.prefix_len + i);
    } else {
      SGL_CHECK_EQ(r.positions.size(), r.input_ids.size());
      positions_.insert(positions_.end(), r.positions.begin(), r.positions.end());
    }
    if (!r.tree_mask.empty()) {
      SGL_CHECK_EQ(r.tree_mask.size(), r.input_ids.size());
      tree_mask_.insert(tree_mask_.end(), r.tree_mask.begin(), r.tree_mask.end());
    } else if (masked) {  // causal rows beside a tree
      SGL_CHECK_LE(n, 64) << "a tree-masked batch holds at most 64 new tokens per request";
      for (int32_t i = 0; i < n; ++i) tree_mask_.push_back(~uint64_t{0} >> (63 - i));
    }
    const int32_t seq_len = r.prefix_len + n;
    SGL_CHECK(r.kv_slots.empty() || static_cast<int32_t>(r.kv_slots.size()) == seq_len)
        << r.kv_slots.size() << " KV slots for " << seq_len << " tokens";
    SGL_CHECK_LE(seq_len, req_to_token_.max_context_len());
    seq_lens_.push_back(seq_len);
    prefix_lens_.push_back(r.prefix_len);
    extend_lens_.push_back(n);
    req_pool_indices_.push_back(r.req_pool_idx);
    qo_indptr_.push_back(qo_indptr_.back() + n);
    max_seq_len = std::max(max_seq_len, seq_len);
  }

  ForwardBatch fb;
  for (int32_t id : input_ids_) {
    if (is_sampled_id_ref(id))
      fb.sampled_id_rows = std::max(fb.sampled_id_rows, sampled_id_row(id) + 1);
  }
  fb.mode = mode;
  fb.logits_mode = logits_mode;
  fb.batch_size = static_cast<int32_t>(bs);
  fb.num_tokens = static_cast<int32_t>(input_ids_.size());
  fb.max_seq_len = max_seq_len;
  fb.seq_lens_host = seq_lens_;
  fb.extend_prefix_lens_host = prefix_lens_;
  fb.extend_seq_lens_host = extend_lens_;
  fb.qo_indptr_host = qo_indptr_;
  fb.req_pool_indices_host = req_pool_indices_;
  auto host_view = [](std::vector<int32_t>& v) {
    return Tensor(v.data(), DType::kI32, {static_cast<int64_t>(v.size())});
  };
  std::vector<int32_t>* arrays[] = {
      &input_ids_,   &positions_, &out_cache_loc_,    &seq_lens_,  &prefix_lens_,
      &extend_lens_, &qo_indptr_, &req_pool_indices_, &kv_indptr_, &kv_indices_};
  Tensor* views[] = {&fb.input_ids, &fb.positions,          &fb.out_cache_loc,
                     &fb.seq_lens,  &fb.extend_prefix_lens, &fb.extend_seq_lens,
                     &fb.qo_indptr, &fb.req_pool_indices,   &fb.kv_indptr,
                     &fb.kv_indices};
  if (masked) fb.tree_mask_host = tree_mask_;
  // Each request's KV slots: its own list, or its row's first seq_len.
  auto gather_kv_indices = [&] {
    kv_indptr_.assign(1, 0);
    kv_indices_.clear();
    for (const BatchRequest& r : requests) {
      if (!r.kv_slots.empty()) {
        kv_indices_.insert(kv_indices_.end(), r.kv_slots.begin(), r.kv_slots.end());
      } else {
        const auto row = req_to_token_.row(r.req_pool_idx);
        const int32_t seq_len = r.prefix_len + static_cast<int32_t>(r.input_ids.size());
        kv_indices_.insert(kv_indices_.end(), row.begin(), row.begin() + seq_len);
      }
      kv_indptr_.push_back(static_cast<int32_t>(kv_indices_.size()));
    }
  };
  if (device_.is_cpu()) {
    // CPU attention reads the table's rows, or kv_indices when a request brings its own slots.
    const int views_used = own_slots ? 10 : 8;
    if (own_slots) gather_kv_indices();
    for (int i = 0; i < views_used; ++i) *views[i] = host_view(*arrays[i]);
    fb.req_to_token = Tensor(const_cast<int32_t*>(req_to_token_.data()), DType::kI32,
                             {req_to_token_.size(), req_to_token_.max_context_len()});
    if (masked) {
      fb.tree_mask =
          Tensor(tree_mask_.data(), DType::kI64, {static_cast<int64_t>(tree_mask_.size())});
    }
    return fb;
  }
  // GPU: gather each request's row into kv_indices, pack everything, upload in one copy. The
  // pinned buffer is rewritten only once the previous upload from it is done (in a pipelined
  // decode loop that upload runs as soon as the step before last is done, so the wait is short).
  uploaded_.synchronize();
  gather_kv_indices();
  int32_t* pinned = pinned_.data<int32_t>();
  int64_t offset = 0;
  for (int i = 0; i < 10; ++i) {
    const auto n = static_cast<int64_t>(arrays[i]->size());
    SGL_CHECK_LE(offset + n, pinned_.tensor().numel());
    std::copy(arrays[i]->begin(), arrays[i]->end(), pinned + offset);
    *views[i] = device_ints_.tensor().slice_rows(offset, n);
    offset += n;
  }
  if (masked) {  // 64-bit rows, 8-byte aligned
    offset += offset % 2;
    const auto n = static_cast<int64_t>(tree_mask_.size());
    SGL_CHECK_LE(offset + 2 * n, pinned_.tensor().numel());
    std::copy(tree_mask_.begin(), tree_mask_.end(), reinterpret_cast<uint64_t*>(pinned + offset));
    fb.tree_mask = Tensor(device_ints_.data<int32_t>() + offset, DType::kI64, {n},
                          device_ints_.tensor().device());
    offset += 2 * n;
  }
  kernels::copy(pinned_.tensor().slice_rows(0, offset), device_ints_.tensor().slice_rows(0, offset),
                stream);
  uploaded_.record(stream);
  return fb;
}

}  // namespace sgl::runner
