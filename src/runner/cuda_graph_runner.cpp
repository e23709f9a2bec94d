// CudaGraphRunner: static inputs, capture (largest bucket first), padded replay.
#include "runner/cuda_graph_runner.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "backend/backend.h"
#include "core/logging.h"
#include "runner/cuda/decode_graph_inputs.h"

namespace sgl::runner {
namespace {

// Order of the arrays in static_ints_: 7 per-request arrays, 2 indptrs, then kv_indices.
enum Slot { kIds, kPositions, kOutLoc, kSeqLens, kPrefix, kExtend, kReqIdx, kQoIndptr, kKvIndptr };

int32_t* ptr(const Tensor& t) { return t.defined() ? t.data<int32_t>() : nullptr; }

cuda::DecodeArrays arrays_of(const ForwardBatch& fb) {
  return {ptr(fb.input_ids), ptr(fb.positions),          ptr(fb.out_cache_loc),
          ptr(fb.seq_lens),  ptr(fb.extend_prefix_lens), ptr(fb.extend_seq_lens),
          ptr(fb.qo_indptr), ptr(fb.req_pool_indices),   ptr(fb.kv_indptr),
          ptr(fb.kv_indices)};
}

}  // namespace

std::vector<int32_t> cuda_graph_batch_sizes(int32_t max_bs) {
  std::vector<int32_t> sizes;
  for (int32_t b : {1, 2, 4, 8}) {
    if (b <= max_bs) sizes.push_back(b);
  }
  for (int32_t b = 16; b <= max_bs; b += 8) sizes.push_back(b);
  if (max_bs > 0 && sizes.back() != max_bs) sizes.push_back(max_bs);
  return sizes;
}

CudaGraphRunner::~CudaGraphRunner() = default;

ForwardBatch CudaGraphRunner::static_batch(int32_t size) {
  const int64_t cap = capacity_;
  const Tensor all = static_ints_.tensor();
  auto per_request = [&](Slot s, int64_t n) { return all.slice_rows(s * cap, n); };
  const int64_t indptr_base = kQoIndptr * cap;
  ForwardBatch fb;
  fb.mode = ForwardMode::kDecode;
  fb.logits_mode = LogitsMode::kLastPerRequest;
  fb.batch_size = size;
  fb.num_tokens = size;
  fb.max_seq_len = max_context_len_;  // an upper bound; kernels read the real lengths
  fb.input_ids = per_request(kIds, size);
  fb.positions = per_request(kPositions, size);
  fb.out_cache_loc = per_request(kOutLoc, size);
  fb.seq_lens = per_request(kSeqLens, size);
  fb.extend_prefix_lens = per_request(kPrefix, size);
  fb.extend_seq_lens = per_request(kExtend, size);
  fb.req_pool_indices = per_request(kReqIdx, size);
  fb.qo_indptr = all.slice_rows(indptr_base, size + 1);
  fb.kv_indptr = all.slice_rows(indptr_base + cap + 1, size + 1);
  fb.kv_indices =
      all.slice_rows(indptr_base + 2 * (cap + 1), static_cast<int64_t>(cap) * max_context_len_);
  // Host mirrors describe the padded batch as captured (every request: one token, seq_len 1).
  fb.seq_lens_host = std::span(ones_).first(size);
  fb.extend_prefix_lens_host = std::span(zeros_).first(size);
  fb.extend_seq_lens_host = std::span(ones_).first(size);
  fb.qo_indptr_host = std::span(iota_).first(size + 1);
  fb.req_pool_indices_host = std::span(zeros_).first(size);
  return fb;
}

Result<std::unique_ptr<CudaGraphRunner>> CudaGraphRunner::create(
    model::Model& model, attention::AttentionBackend& attention, Allocator& allocator,
    backend::Stream stream, std::vector<int32_t> batch_sizes, int32_t max_context_len,
    distributed::Communicator* communicator) {
  if (batch_sizes.empty()) return invalid_argument("no CUDA graph batch sizes");
  std::sort(batch_sizes.begin(), batch_sizes.end());
  std::unique_ptr<CudaGraphRunner> r(new CudaGraphRunner(attention, stream));
  r->max_context_len_ = max_context_len;
  r->capacity_ = batch_sizes.back();
  const int64_t cap = r->capacity_;
  r->static_ints_ =
      Buffer(allocator, DType::kI32, {kQoIndptr * cap + 2 * (cap + 1) + cap * max_context_len});
  r->ones_.assign(cap, 1);
  r->zeros_.assign(cap, 0);
  r->iota_.resize(cap + 1);
  std::iota(r->iota_.begin(), r->iota_.end(), 0);

  const auto start = std::chrono::steady_clock::now();
  r->buckets_.resize(batch_sizes.size());
  attention.init_graph_capture(batch_sizes, max_context_len);
  for (size_t i = batch_sizes.size(); i-- > 0;) {  // largest first
    Bucket& b = r->buckets_[i];
    b.size = batch_sizes[i];
    b.fb = r->static_batch(b.size);
    // Every row a dummy request, then one eager pass (lazy state, cuBLAS heuristics) and the
    // captured one.
    cuda::pack_decode_inputs(arrays_of(b.fb), 0, 0, arrays_of(b.fb), b.size, nullptr, stream);
    model::ModelContext ctx{attention, stream, communicator};
    attention.plan(b.fb);
    attention.prepare_capture(b.fb);
    model.forward(b.fb, ctx);
    backend::synchronize(stream);
    b.graph =
        backend::CudaGraph::capture(stream, [&] { b.logits = model.forward(b.fb, ctx).logits; });
  }
  backend::synchronize(stream);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  SGL_LOG_INFO << "captured " << batch_sizes.size() << " decode CUDA graphs (batch 1.."
               << batch_sizes.back() << ") in " << took.count() << " s";
  return r;
}

bool CudaGraphRunner::can_run(const ForwardBatch& fb) const {
  return fb.mode == ForwardMode::kDecode && fb.logits_mode == LogitsMode::kLastPerRequest &&
         fb.capture_hidden_mode == CaptureHiddenMode::kNull && fb.pooling == PoolingType::kNone &&
         fb.batch_size <= max_batch_size() && fb.kv_indices.defined() &&
         fb.max_seq_len <= max_context_len_;
}

model::ModelOutput CudaGraphRunner::replay(const ForwardBatch& fb, const int32_t* sampled) {
  SGL_CHECK(can_run(fb)) << "CUDA graph replay of an unsupported batch";
  auto it = std::lower_bound(buckets_.begin(), buckets_.end(), fb.batch_size,
                             [](const Bucket& b, int32_t bs) { return b.size < bs; });
  Bucket& bucket = *it;
  const auto num_kv = static_cast<int32_t>(fb.kv_indices.numel());  // sum of seq_lens
  SGL_CHECK(sampled != nullptr || fb.sampled_id_rows == 0)
      << "sampled id references without the sampled ids";
  cuda::pack_decode_inputs(arrays_of(fb), fb.batch_size, num_kv, arrays_of(bucket.fb), bucket.size,
                           sampled, stream_);
  attention_.prepare_replay(fb);
  bucket.graph.replay(stream_);
  return {bucket.logits.slice_rows(0, fb.batch_size), Tensor(), Tensor()};
}

}  // namespace sgl::runner
