// AttentionBackend: paged attention over the KvPool for one forward pass (all layers).
#pragma once

#include <memory>
#include <span>
#include <string>

#include "attention/kv_pool.h"
#include "attention/qk_norm.h"
#include "backend/stream.h"
#include "core/status.h"
#include "forward/forward_batch.h"

namespace sgl::attention {

struct AttentionConfig {
  int64_t num_q_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  float scale = 0.f;  // softmax scale, usually 1/sqrt(head_dim)
  // Output rows of the projection that reads the attention's output (the hidden size; 0 if
  // unknown): the CUDA decode decides by it whether to launch that projection early.
  int64_t projection_rows = 0;
  // The queries' and the output's dtype (the compute dtype): the flash kernels compute in bf16,
  // so an f32 model takes the reference kernels whatever its KV cache's dtype.
  DType dtype = DType::kBF16;
};

class AttentionBackend {
 public:
  virtual ~AttentionBackend() = default;
  // Host-side metadata for the batch; called once per forward, never inside graph capture.
  virtual void plan(const ForwardBatch& fb) = 0;
  // Writes k and v of the new tokens to their out_cache_loc slots of `layer`, then computes
  // causal attention of q over each request's KV (prefix + new tokens) into out.
  // q: [T, Hq, D]; k, v: [T, Hk, D] (rows may be strided, last dim contiguous);
  // out: [T, Hq * D] contiguous.
  virtual void forward(int layer, const Tensor& q, const Tensor& k, const Tensor& v,
                       const Tensor& out, const ForwardBatch& fb) = 0;
  // Rotate-half RoPE of q and k at `positions` (cos_sin: [max_pos, D] f32, cos | sin halves)
  // fused with forward(): the rotated k is written straight into the cache (k itself may be
  // left unrotated). With qk_norm, q and k are normalized per head before the rotation, as
  // kernels::qk_rms_norm would (q and k themselves may be left unnormalized). Returns false,
  // having done nothing, when the backend has no fused path for these tensors (and norm); the
  // caller then runs the norm, kernels::rope and forward() itself.
  virtual bool forward_with_rope(int layer, const Tensor& q, const Tensor& k, const Tensor& v,
                                 const Tensor& positions, const Tensor& cos_sin, const Tensor& out,
                                 const ForwardBatch& fb, const QkNorm* qk_norm) {
    return false;
  }
  virtual void init_graph_capture(std::span<const int> batch_sizes, int max_context_len) {}
  // Before a graph's capture and each replay (outside the capture): fb is the static, padded
  // batch the graph reads.
  virtual void prepare_capture(const ForwardBatch& fb) {}
  virtual void prepare_replay(const ForwardBatch& fb) {}
};

// Creates the backend registered under `name`: "cpu", "cuda_ref" (the reference CUDA kernel);
// "auto" picks the device's default. The backend borrows `kv_pool`, which must outlive it, and
// queues its work on `stream`.
Result<std::unique_ptr<AttentionBackend>> create_attention_backend(const std::string& name,
                                                                   Device device,
                                                                   const AttentionConfig& config,
                                                                   KvPool& kv_pool,
                                                                   backend::Stream stream);

}  // namespace sgl::attention
