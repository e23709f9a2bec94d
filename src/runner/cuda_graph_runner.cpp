// CudaGraphRunner: static inputs, capture (largest bucket first), padded replay.
#include "runner/cuda_graph_runner.h"

#include <algorithm>
#include <chrono>

#include "backend/backend.h"
#include "core/logging.h"
#include "runner/cuda/graph_inputs.h"

namespace sgl::runner {
namespace {

int32_t* ptr(const Tensor& t) { return t.defined() ? t.data<int32_t>() : nullptr; }

cuda::GraphInputArrays arrays_of(const ForwardBatch& fb) {
  return {ptr(fb.input_ids),
          ptr(fb.positions),
          ptr(fb.out_cache_loc),
          fb.tree_mask.defined() ? static_cast<uint64_t*>(fb.tree_mask.raw()) : nullptr,
          ptr(fb.seq_lens),
          ptr(fb.extend_prefix_lens),
          ptr(fb.extend_seq_lens),
          ptr(fb.qo_indptr),
          ptr(fb.req_pool_indices),
          ptr(fb.kv_indptr),
          ptr(fb.kv_indices)};
}

}  // namespace

CudaGraphRunner::~CudaGraphRunner() = default;

ForwardBatch CudaGraphRunner::static_batch(int32_t size) {
  // static_ints_: 3 token arrays [cap * T], 4 per-request arrays [cap], 2 indptrs [cap + 1],
  // then kv_indices [cap * max_context_len].
  const int64_t cap = capacity_, t = shape_.tokens, n = static_cast<int64_t>(size) * t;
  const Tensor all = static_ints_.tensor();
  int64_t offset = 0;
  auto next = [&](int64_t room, int64_t used) {
    const Tensor view = all.slice_rows(offset, used);
    offset += room;
    return view;
  };
  ForwardBatch fb;
  fb.mode = is_verify() ? ForwardMode::kTargetVerify : ForwardMode::kDecode;
  fb.logits_mode = is_verify() ? LogitsMode::kAllTokens : LogitsMode::kLastPerRequest;
  // A verify keeps every token's hidden states (EAGLE's draft extend reads them).
  fb.capture_hidden_mode = is_verify() ? CaptureHiddenMode::kFull : CaptureHiddenMode::kNull;
  fb.batch_size = size;
  fb.num_tokens = static_cast<int32_t>(n);
  fb.max_seq_len = max_context_len_;  // an upper bound; kernels read the real lengths
  fb.input_ids = next(cap * t, n);
  fb.positions = next(cap * t, n);
  fb.out_cache_loc = next(cap * t, n);
  fb.seq_lens = next(cap, size);
  fb.extend_prefix_lens = next(cap, size);
  fb.extend_seq_lens = next(cap, size);
  fb.req_pool_indices = next(cap, size);
  fb.qo_indptr = next(cap + 1, size + 1);
  fb.kv_indptr = next(cap + 1, size + 1);
  fb.kv_indices = next(cap * max_context_len_, cap * max_context_len_);
  if (shape_.tree_mask) fb.tree_mask = static_mask_.tensor().slice_rows(0, n);
  // Host mirrors describe the padded batch as captured (every request: T tokens, no prefix).
  fb.seq_lens_host = std::span(tokens_).first(size);
  fb.extend_prefix_lens_host = std::span(zeros_).first(size);
  fb.extend_seq_lens_host = std::span(tokens_).first(size);
  fb.qo_indptr_host = std::span(indptr_).first(size + 1);
  fb.req_pool_indices_host = std::span(zeros_).first(size);
  return fb;
}

Result<std::unique_ptr<CudaGraphRunner>> CudaGraphRunner::create(
    model::Model& model, attention::AttentionBackend& attention, Allocator& allocator,
    backend::Stream stream, std::vector<int32_t> batch_sizes, int32_t max_context_len,
    distributed::Communicator* communicator, GraphPassShape shape) {
  if (batch_sizes.empty()) return invalid_argument("no CUDA graph batch sizes");
  if (shape.tokens < 1 || shape.tokens > 64 || shape.tokens > max_context_len ||
      (shape.tree_mask && shape.tokens == 1)) {
    return invalid_argument("CUDA graphs of " + std::to_string(shape.tokens) +
                            " tokens per request" + (shape.tree_mask ? " (tree)" : ""));
  }
  std::sort(batch_sizes.begin(), batch_sizes.end());
  std::unique_ptr<CudaGraphRunner> r(new CudaGraphRunner(attention, stream, shape));
  r->max_context_len_ = max_context_len;
  r->capacity_ = batch_sizes.back();
  const int64_t cap = r->capacity_, t = shape.tokens;
  r->static_ints_ = Buffer(allocator, DType::kI32,
                           {3 * cap * t + 4 * cap + 2 * (cap + 1) + cap * max_context_len});
  if (shape.tree_mask) r->static_mask_ = Buffer(allocator, DType::kI64, {cap * t});
  r->tokens_.assign(cap, shape.tokens);
  r->zeros_.assign(cap, 0);
  r->indptr_.resize(cap + 1);
  for (int64_t i = 0; i <= cap; ++i) r->indptr_[i] = static_cast<int32_t>(i * t);

  const auto start = std::chrono::steady_clock::now();
  r->buckets_.resize(batch_sizes.size());
  attention.init_graph_capture(batch_sizes, max_context_len);
  for (size_t i = batch_sizes.size(); i-- > 0;) {  // largest first
    Bucket& b = r->buckets_[i];
    b.size = batch_sizes[i];
    b.fb = r->static_batch(b.size);
    // Every row a dummy request, then one eager pass (lazy state, cuBLAS heuristics) and the
    // captured one.
    cuda::pack_graph_inputs(arrays_of(b.fb), 0, 0, arrays_of(b.fb), b.size, shape.tokens, nullptr,
                            stream);
    model::ModelContext ctx{attention, stream, communicator};
    attention.plan(b.fb);
    attention.prepare_capture(b.fb);
    model.forward(b.fb, ctx);
    backend::synchronize(stream);
    b.graph = backend::CudaGraph::capture(stream, [&] { b.out = model.forward(b.fb, ctx); });
  }
  backend::synchronize(stream);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  const std::string kind = r->is_verify()
                               ? "verify (" + std::to_string(shape.tokens) + " tokens a request" +
                                     (shape.tree_mask ? ", tree mask)" : ", causal)")
                               : "decode";
  SGL_LOG_INFO << "captured " << batch_sizes.size() << " " << kind << " CUDA graphs (batch 1.."
               << batch_sizes.back() << ") in " << took.count() << " s";
  return r;
}

bool CudaGraphRunner::can_run(const ForwardBatch& fb) const {
  if (fb.pooling != PoolingType::kNone || fb.reads_routed_experts || !fb.lora_ids_host.empty() ||
      fb.batch_size > max_batch_size() || !fb.kv_indices.defined() ||
      fb.max_seq_len > max_context_len_) {
    return false;
  }
  if (!is_verify()) {
    return fb.mode == ForwardMode::kDecode && fb.logits_mode == LogitsMode::kLastPerRequest &&
           fb.capture_hidden_mode == CaptureHiddenMode::kNull && !fb.tree_mask.defined();
  }
  const bool extend = fb.mode == ForwardMode::kExtend || fb.mode == ForwardMode::kTargetVerify;
  const bool hidden = fb.capture_hidden_mode == CaptureHiddenMode::kNull ||
                      fb.capture_hidden_mode == CaptureHiddenMode::kFull;
  // A causal batch can take tree graphs (their padding writes causal rows), not the reverse.
  if (!extend || fb.logits_mode != LogitsMode::kAllTokens || !hidden ||
      (fb.tree_mask.defined() && !shape_.tree_mask) ||
      fb.num_tokens != fb.batch_size * shape_.tokens) {
    return false;
  }
  return std::all_of(fb.extend_seq_lens_host.begin(), fb.extend_seq_lens_host.end(),
                     [&](int32_t n) { return n == shape_.tokens; });
}

model::ModelOutput CudaGraphRunner::replay(const ForwardBatch& fb, const int32_t* sampled) {
  SGL_CHECK(can_run(fb)) << "CUDA graph replay of an unsupported batch";
  auto it = std::lower_bound(buckets_.begin(), buckets_.end(), fb.batch_size,
                             [](const Bucket& b, int32_t bs) { return b.size < bs; });
  Bucket& bucket = *it;
  const auto num_kv = static_cast<int32_t>(fb.kv_indices.numel());  // sum of seq_lens
  SGL_CHECK(sampled != nullptr || fb.sampled_id_rows == 0)
      << "sampled id references without the sampled ids";
  cuda::pack_graph_inputs(arrays_of(fb), fb.batch_size, num_kv, arrays_of(bucket.fb), bucket.size,
                          shape_.tokens, sampled, stream_);
  attention_.prepare_replay(bucket.fb);  // the padded batch the graph reads
  bucket.graph.replay(stream_);
  // The real requests' rows come first; the padding's follow, unread.
  auto rows = [](const Tensor& t, int64_t n) { return t.defined() ? t.slice_rows(0, n) : t; };
  model::ModelOutput out;
  out.logits = rows(bucket.out.logits, fb.num_logit_rows());
  if (fb.capture_hidden_mode == CaptureHiddenMode::kFull) {
    out.hidden_states = rows(bucket.out.hidden_states, fb.num_tokens);
    out.aux_hidden_states = rows(bucket.out.aux_hidden_states, fb.num_tokens);
  }
  return out;
}

}  // namespace sgl::runner
