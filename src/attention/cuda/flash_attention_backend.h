// FlashAttentionBackend: our paged flash attention kernels behind AttentionBackend ("flash"):
// split-KV tensor-core decode, FlashAttention-2 style extend; bf16 KV, f32 accumulation.
#pragma once

#include "attention/attention_backend.h"
#include "attention/cuda/flash_attention.h"
#include "backend/cuda/cuda_allocator.h"
#include "core/buffer.h"

namespace sgl::attention {

// Decode launches depend only on the batch size and fixed config: the split count comes from
// the batch size and how many decode CTAs the GPU holds at once, and each CTA finds its chunk
// from the device seq_lens. The split-KV scratch is allocated here once, sized for any batch
// size. So decode can be captured in a CUDA graph and replayed with new lengths and slots in
// the same device tensors. Head dims other than 64/128/256 (or unaligned layouts) fall back to
// the reference kernel.
class FlashAttentionBackend final : public AttentionBackend {
 public:
  // kv_pool: bf16, on `device`; must outlive the backend.
  FlashAttentionBackend(const AttentionConfig& config, KvPool& kv_pool, backend::Stream stream,
                        Device device);
  // The kernels read every per-batch value from the ForwardBatch tensors; a verify pass run as
  // decode rows gets its rows' lengths from a kernel queued here (before the pass, or before a
  // graph's replay: the decode kernel reads them before waiting on the kernel before it).
  void plan(const ForwardBatch& fb) override;
  void prepare_replay(const ForwardBatch& fb) override { plan(fb); }
  bool forward_with_rope(int layer, const Tensor& q, const Tensor& k, const Tensor& v,
                         const Tensor& positions, const Tensor& cos_sin, const Tensor& out,
                         const ForwardBatch& fb, const QkNorm* qk_norm) override;
  void forward(int layer, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
               const ForwardBatch& fb) override;
  // forward() without the KV store: attention of q over KV already in the pool.
  // q: [T, Hq, D] row-strided; out: [T, Hq * D].
  void attend(int layer, const Tensor& q, const Tensor& out, const ForwardBatch& fb);

  // The decode kernel's CTA shape and splits per request at this batch size (exposed for tests
  // and benchmarks).
  cuda::DecodeShape decode_shape(int batch_size) const;

 private:
  // Whether q of this batch goes to the decode kernel (else extend or the reference).
  bool takes_decode_kernel(const Tensor& q, int layer, const ForwardBatch& fb) const;
  // The decode kernel (and its merge); fresh: the new tokens to rotate and store, or nullptr.
  void decode(int layer, const Tensor& q, const Tensor& out, const ForwardBatch& fb,
              const cuda::DecodeNewTokens* fresh);
  // Whether a causal verify pass runs through the decode kernel, each new token a row: with a
  // few new tokens per request the extend kernel walks each prefix in one CTA per KV head,
  // where the decode kernel splits it over the GPU. The rows' lengths are plan()'s.
  bool verify_as_decode_rows(const ForwardBatch& fb) const;
  void decode_verify_rows(int layer, const Tensor& q, const Tensor& out, const ForwardBatch& fb);

  AttentionConfig config_;
  KvPool& kv_pool_;
  backend::Stream stream_;
  int sm_count_ = 0;
  int resident_narrow_ctas_ = 0;  // narrow decode CTAs the GPU holds at once
  int resident_wide_ctas_ = 0;    // wide decode CTAs the GPU holds at once
  bool hopper_extend_ = false;    // the device runs flash_extend_hopper.cu's kernel
  backend::CudaAllocator allocator_;
  Buffer partial_o_;            // f32 [rows, head_dim]: split-KV partial outputs
  Buffer partial_lse_;          // f32 [rows]
  Buffer verify_row_seq_lens_;  // i32 [kMaxVerifyRows]: a verify's rows as decode rows
  Buffer verify_row_kv_start_;  // i32 [kMaxVerifyRows]
};

}  // namespace sgl::attention
