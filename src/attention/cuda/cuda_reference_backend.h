// CudaReferenceBackend: the reference CUDA paged attention behind AttentionBackend (bf16 KV).
#pragma once

#include "attention/attention_backend.h"

namespace sgl::attention {

class CudaReferenceBackend final : public AttentionBackend {
 public:
  CudaReferenceBackend(const AttentionConfig& config, KvPool& kv_pool, backend::Stream stream);
  void plan(const ForwardBatch& fb) override {}
  void forward(int layer, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
               const ForwardBatch& fb) override;

 private:
  AttentionConfig config_;
  KvPool& kv_pool_;
  backend::Stream stream_;
};

}  // namespace sgl::attention
