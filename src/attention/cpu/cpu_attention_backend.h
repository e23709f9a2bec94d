// CpuAttentionBackend: f32 paged causal attention (prefill with cached prefix, and decode) over an
// f32 KV pool, or an FP8 one (--kv-cache-dtype) read back as float(code) * its layer's scale.
#pragma once

#include "attention/attention_backend.h"

namespace sgl::attention {

class CpuAttentionBackend final : public AttentionBackend {
 public:
  CpuAttentionBackend(const AttentionConfig& config, KvPool& kv_pool);
  void plan(const ForwardBatch& fb) override {}
  void forward(int layer, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
               const ForwardBatch& fb) override;

 private:
  void store_kv(int layer, const Tensor& k, const Tensor& v, const ForwardBatch& fb);
  AttentionConfig config_;
  KvPool& kv_pool_;
};

}  // namespace sgl::attention
