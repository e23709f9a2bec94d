// CudaReferenceBackend: store the new K/V, then the reference kernel.
#include "attention/cuda/cuda_reference_backend.h"

#include "attention/cuda/kv_store.h"
#include "attention/cuda/reference_attention.h"

namespace sgl::attention {

CudaReferenceBackend::CudaReferenceBackend(const AttentionConfig& config, KvPool& kv_pool,
                                           backend::Stream stream)
    : config_(config), kv_pool_(kv_pool), stream_(stream) {
  SGL_CHECK(kv_pool.shape().dtype == DType::kBF16 || kv_pool.shape().dtype == DType::kF32 ||
            is_fp8_kv(kv_pool.shape().dtype))
      << "the reference CUDA attention needs a bf16, f32 or FP8 KV pool";
}

void CudaReferenceBackend::forward(int layer, const Tensor& q, const Tensor& k, const Tensor& v,
                                   const Tensor& out, const ForwardBatch& fb) {
  SGL_CHECK(fb.kv_indices.defined() && fb.kv_indices.device().is_cuda())
      << "CUDA attention needs the batch's kv_indices on the device";
  const LayerKv cache = kv_pool_.layer(layer);
  cuda::store_kv(k, v, fb.out_cache_loc, cache, stream_);
  cuda::reference_attention(q, cache, out, fb, config_.scale, stream_);
}

}  // namespace sgl::attention
