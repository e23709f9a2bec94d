// FlashAttentionBackend: split-KV decode (with the new tokens' RoPE and KV store fused in, or
// after the store) or tensor-core extend.
#include "attention/cuda/flash_attention_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "attention/cuda/flash_attention.h"
#include "attention/cuda/kv_store.h"
#include "attention/cuda/reference_attention.h"
#include "attention/cuda/split_kv_policy.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_runtime.h"
#include "core/alignment.h"
#include "kernels/rope.h"

namespace sgl::attention {
namespace {

// The tensor-core kernels' shapes and layout: head_dim 64/128/256, bf16 q with 16-byte aligned
// rows. q: [T, Hq, D] row-strided. (The pool's dtype and layout the constructor checked.)
bool flash_supports(const Tensor& q) {
  const int64_t dim = q.size(2);
  const bool fast_dim = dim == 64 || dim == 128 || dim == 256;
  return fast_dim && q.dtype() == DType::kBF16 && q.stride(2) == 1 && q.stride(1) % 8 == 0 &&
         q.stride(0) % 8 == 0 && is_aligned(q.raw(), 16);
}

// The contract's output (attention_backend.h), which every kernel writes as contiguous rows.
void check_output(const Tensor& out, const ForwardBatch& fb, const AttentionConfig& config) {
  SGL_CHECK(out.defined() && out.dtype() == DType::kBF16 && out.ndim() == 2 &&
            out.is_contiguous() && out.size(0) >= fb.num_tokens &&
            out.size(1) == config.num_q_heads * config.head_dim)
      << "attention output must be contiguous bf16 [>= " << fb.num_tokens << ", "
      << config.num_q_heads * config.head_dim << "], got "
      << (out.defined() ? out.shape_string() : "undefined");
}

// k or v rows the decode kernel can read in 16-byte chunks: [T, Hk, D] bf16, rows aligned.
bool chunked_rows(const Tensor& t) {
  return t.dtype() == DType::kBF16 && t.stride(2) == 1 && t.stride(1) % 8 == 0 &&
         t.stride(0) % 8 == 0 && is_aligned(t.raw(), 16);
}

// Verify passes through the decode kernel: at most this many rows, and new tokens a request
// (a chain's num_steps + 1; trees are masked and take the extend kernel).
constexpr int64_t kMaxVerifyRows = 8192;
constexpr int32_t kMaxVerifyTokens = 16;

}  // namespace

FlashAttentionBackend::FlashAttentionBackend(const AttentionConfig& config, KvPool& kv_pool,
                                             backend::Stream stream, Device device)
    : config_(config), kv_pool_(kv_pool), stream_(stream), allocator_(device.index) {
  SGL_CHECK(cuda::flash_reads_kv_dtype(kv_pool.shape().dtype))
      << "flash attention needs a bf16 or FP8 KV pool, not " << dtype_name(kv_pool.shape().dtype);
  SGL_CHECK(kv_pool.shape().num_kv_heads == config.num_kv_heads &&
            kv_pool.shape().head_dim == config.head_dim)
      << "the KV pool holds " << kv_pool.shape().num_kv_heads << " heads of "
      << kv_pool.shape().head_dim << ", the attention reads " << config.num_kv_heads << " of "
      << config.head_dim;
  // Kernel attributes are per device: set them on `device`, then restore the caller's.
  int previous = 0;
  SGL_CUDA_CHECK(cudaGetDevice(&previous));
  SGL_CUDA_CHECK(cudaSetDevice(device.index));
  cuda::configure_flash_decode_kernels();
  hopper_extend_ = cuda::configure_flash_extend_kernels();
  const int dim = static_cast<int>(config.head_dim);
  sm_count_ = backend::cuda::multiprocessor_count(device.index);
  const DType kv_dtype = kv_pool.shape().dtype;
  resident_narrow_ctas_ = sm_count_ * std::max(1, cuda::flash_decode_ctas_per_sm(
                                                      dim, cuda::DecodeWidth::kNarrow, kv_dtype));
  resident_wide_ctas_ = sm_count_ * std::max(1, cuda::flash_decode_ctas_per_sm(
                                                    dim, cuda::DecodeWidth::kWide, kv_dtype));
  SGL_CUDA_CHECK(cudaSetDevice(previous));
  const int64_t rows = cuda::max_split_partial_rows(
      static_cast<int>(config.num_q_heads), static_cast<int>(config.num_kv_heads),
      std::max(resident_narrow_ctas_, resident_wide_ctas_));
  partial_o_ = Buffer(allocator_, DType::kF32, {rows, config.head_dim});
  partial_lse_ = Buffer(allocator_, DType::kF32, {rows});
  verify_row_seq_lens_ = Buffer(allocator_, DType::kI32, {kMaxVerifyRows});
  verify_row_kv_start_ = Buffer(allocator_, DType::kI32, {kMaxVerifyRows});
}

bool FlashAttentionBackend::verify_as_decode_rows(const ForwardBatch& fb) const {
  if (fb.mode != ForwardMode::kTargetVerify || fb.tree_mask.defined() || fb.num_tokens <= 0 ||
      fb.num_tokens > kMaxVerifyRows || config_.num_q_heads > 16 * config_.num_kv_heads ||
      !fb.kv_indices.defined() ||
      static_cast<int32_t>(fb.extend_seq_lens_host.size()) != fb.batch_size) {
    return false;
  }
  return std::all_of(fb.extend_seq_lens_host.begin(), fb.extend_seq_lens_host.end(),
                     [](int32_t n) { return n <= kMaxVerifyTokens; });
}

void FlashAttentionBackend::plan(const ForwardBatch& fb) {
  if (!verify_as_decode_rows(fb)) return;
  cuda::verify_rows_as_decode(fb, verify_row_seq_lens_.data<int32_t>(),
                              verify_row_kv_start_.data<int32_t>(), stream_);
}

void FlashAttentionBackend::decode_verify_rows(int layer, const Tensor& q, const Tensor& out,
                                               const ForwardBatch& fb) {
  ForwardBatch rows;
  rows.mode = ForwardMode::kDecode;
  rows.batch_size = fb.num_tokens;
  rows.num_tokens = fb.num_tokens;
  rows.seq_lens = verify_row_seq_lens_.tensor().slice_rows(0, fb.num_tokens);
  rows.kv_indptr = verify_row_kv_start_.tensor().slice_rows(0, fb.num_tokens);
  rows.kv_indices = fb.kv_indices;
  const int32_t fresh =
      *std::max_element(fb.extend_seq_lens_host.begin(), fb.extend_seq_lens_host.end());
  const cuda::SplitKvScratch scratch{partial_o_.data<float>(), partial_lse_.data<float>(),
                                     partial_lse_.tensor().size(0)};
  cuda::flash_decode(q, kv_pool_.layer(layer), out, rows, config_.scale,
                     decode_shape(rows.batch_size), scratch, stream_, nullptr, fresh);
}

cuda::DecodeShape FlashAttentionBackend::decode_shape(int batch_size) const {
  // Wide CTAs while one of them per (request, KV head) fits on the SMs at once, so a short
  // context needs neither splits nor a merge (faster than narrow CTAs at batch 1 to 16:
  // docs/perf-log/cuda-session-06.md); narrow ones once the batch fills the GPU by itself.
  const int kv_heads = static_cast<int>(config_.num_kv_heads);
  if (batch_size * kv_heads <= sm_count_) {
    return {
        cuda::DecodeWidth::kWide,
        cuda::decode_num_splits(batch_size, kv_heads, resident_wide_ctas_),
        cuda::decode_early_launch_splits(sm_count_, batch_size, kv_heads, config_.projection_rows)};
  }
  return {cuda::DecodeWidth::kNarrow,
          cuda::decode_num_splits(batch_size, kv_heads, resident_narrow_ctas_)};
}

void FlashAttentionBackend::forward(int layer, const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& out, const ForwardBatch& fb) {
  SGL_CHECK(fb.kv_indices.defined() && fb.kv_indices.device().is_cuda())
      << "CUDA attention needs the batch's kv_indices on the device";
  check_output(out, fb, config_);
  cuda::store_kv(k, v, fb.out_cache_loc, kv_pool_.layer(layer), stream_);
  attend(layer, q, out, fb);
}

bool FlashAttentionBackend::forward_with_rope(int layer, const Tensor& q, const Tensor& k,
                                              const Tensor& v, const Tensor& positions,
                                              const Tensor& cos_sin, const Tensor& out,
                                              const ForwardBatch& fb, const QkNorm* qk_norm) {
  SGL_CHECK(fb.kv_indices.defined() && fb.kv_indices.device().is_cuda())
      << "CUDA attention needs the batch's kv_indices on the device";
  kernels::check_rope_args(q, k, positions, cos_sin);
  check_output(out, fb, config_);
  if (qk_norm != nullptr && !cuda::qk_norm_fusable(q, *qk_norm)) return false;
  // A decode batch: the decode kernel rotates and stores the new tokens itself.
  if (fb.num_tokens > 0 && takes_decode_kernel(q, layer, fb) && chunked_rows(k) &&
      chunked_rows(v)) {
    const cuda::DecodeNewTokens fresh{k, v, positions, cos_sin, fb.out_cache_loc, qk_norm};
    decode(layer, q, out, fb, &fresh);
    return true;
  }
  if (!cuda::rope_store_kv(q, k, v, positions, cos_sin, fb.out_cache_loc, kv_pool_.layer(layer),
                           stream_, qk_norm)) {
    return false;
  }
  attend(layer, q, out, fb);
  return true;
}

bool FlashAttentionBackend::takes_decode_kernel(const Tensor& q, int layer,
                                                const ForwardBatch& fb) const {
  // The decode kernel packs a KV head's q heads into 16 MMA rows; wider groups use extend.
  return fb.mode == ForwardMode::kDecode && fb.num_tokens == fb.batch_size &&
         !fb.tree_mask.defined() && config_.num_q_heads <= 16 * config_.num_kv_heads &&
         flash_supports(q);
}

void FlashAttentionBackend::decode(int layer, const Tensor& q, const Tensor& out,
                                   const ForwardBatch& fb, const cuda::DecodeNewTokens* fresh) {
  const cuda::SplitKvScratch scratch{partial_o_.data<float>(), partial_lse_.data<float>(),
                                     partial_lse_.tensor().size(0)};
  cuda::flash_decode(q, kv_pool_.layer(layer), out, fb, config_.scale, decode_shape(fb.batch_size),
                     scratch, stream_, fresh);
}

void FlashAttentionBackend::attend(int layer, const Tensor& q, const Tensor& out,
                                   const ForwardBatch& fb) {
  if (fb.num_tokens == 0) return;
  if (takes_decode_kernel(q, layer, fb)) {
    decode(layer, q, out, fb, nullptr);
  } else if (verify_as_decode_rows(fb) && flash_supports(q)) {
    decode_verify_rows(layer, q, out, fb);
  } else if (flash_supports(q)) {
    cuda::flash_extend(q, kv_pool_.layer(layer), out, fb, config_.scale, stream_, hopper_extend_);
  } else {
    cuda::reference_attention(q, kv_pool_.layer(layer), out, fb, config_.scale, stream_);
  }
}

}  // namespace sgl::attention
