// The attention backend registry: backends by name, as --attention-backend selects them.
#include "attention/attention_backend.h"
#include "attention/cpu/cpu_attention_backend.h"
#ifdef SGL_WITH_CUDA
#include "attention/cuda/cuda_reference_backend.h"
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
  const std::string resolved = name == "auto" ? (device.is_cpu() ? "cpu" : "cuda_ref") : name;
  if (resolved == "cpu") {
    if (!device.is_cpu()) return invalid_argument("attention backend 'cpu' needs --device cpu");
    return std::unique_ptr<AttentionBackend>(new CpuAttentionBackend(config, kv_pool));
  }
#ifdef SGL_WITH_CUDA
  if (resolved == "cuda_ref") {
    if (!device.is_cuda()) return invalid_argument("attention backend 'cuda_ref' needs a GPU");
    return std::unique_ptr<AttentionBackend>(new CudaReferenceBackend(config, kv_pool, stream));
  }
#endif
  return invalid_argument("unknown attention backend '" + name + "' for device " +
                          device.to_string() + " (available: cpu, cuda_ref)");
}

}  // namespace sgl::attention
