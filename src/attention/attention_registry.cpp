// The attention backend registry: backends by name, as --attention-backend selects them.
#include "attention/attention_backend.h"
#include "attention/cpu/cpu_attention_backend.h"
#ifdef SGL_WITH_CUDA
#include "attention/cuda/cuda_reference_backend.h"
#include "attention/cuda/flash_attention_backend.h"
#endif

namespace sgl::attention {

Result<std::unique_ptr<AttentionBackend>> create_attention_backend(const std::string& name,
                                                                   Device device,
                                                                   const AttentionConfig& config,
                                                                   KvPool& kv_pool,
                                                                   backend::Stream stream) {
  if (config.num_q_heads <= 0 || config.num_kv_heads <= 0 ||
      config.num_q_heads % config.num_kv_heads != 0 || config.head_dim <= 0) {
    return invalid_argument("attention: bad head configuration");
  }
  // On GPUs "auto" is our flash kernels, which compute in bf16 over bf16 and FP8 KV caches; the
  // reference otherwise (f32 models, FP8 caches under them included).
  const DType kv_dtype = kv_pool.shape().dtype;
  const bool flash_kv =
      config.dtype == DType::kBF16 && (kv_dtype == DType::kBF16 || is_fp8_kv(kv_dtype));
  const std::string resolved =
      name == "auto" ? (device.is_cpu() ? "cpu" : (flash_kv ? "flash" : "cuda_ref")) : name;
  if (resolved == "cpu") {
    if (!device.is_cpu()) return invalid_argument("attention backend 'cpu' needs --device cpu");
    return std::unique_ptr<AttentionBackend>(new CpuAttentionBackend(config, kv_pool));
  }
#ifdef SGL_WITH_CUDA
  if (resolved == "cuda_ref") {
    if (!device.is_cuda()) return invalid_argument("attention backend 'cuda_ref' needs a GPU");
    return std::unique_ptr<AttentionBackend>(new CudaReferenceBackend(config, kv_pool, stream));
  }
  if (resolved == "flash") {
    if (!device.is_cuda()) return invalid_argument("attention backend 'flash' needs a GPU");
    if (!flash_kv) {
      return invalid_argument(
          "attention backend 'flash' needs a bfloat16 model (--dtype) with a bfloat16 or FP8 KV "
          "cache");
    }
    return std::unique_ptr<AttentionBackend>(
        new FlashAttentionBackend(config, kv_pool, stream, device));
  }
#endif
  return invalid_argument("unknown attention backend '" + name + "' for device " +
                          device.to_string() + " (available: cpu, cuda_ref, flash)");
}

}  // namespace sgl::attention
