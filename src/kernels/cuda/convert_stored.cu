// CUDA stored-format conversion: a grid-stride loop over the destination, one value per thread,
// decoded by the same stored_values.h code the host runs. The source is read a byte at a time (a
// staging copy of unknown alignment); neighbouring threads read the same block, so the loads hit
// cache, and this runs once per weight at load, far below the PCIe copy in cost.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "kernels/cuda/cuda_convert_stored.h"
#include "kernels/stored_values.h"

namespace sgl::kernels::cuda {
namespace {

// Round to nearest even, as the host's float_to_bf16 / float_to_f16.
template <typename T>
__device__ __forceinline__ T store_as(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(v);
  } else {
    return __float2half_rn(v);
  }
}

template <StoredFormat F, typename T>
__global__ void convert_kernel(const uint8_t* src, T* dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = store_as<T>(stored_values::stored_value<F>(src, i));
  }
}

template <StoredFormat F>
void launch_format(const uint8_t* src, const Tensor& dst, cudaStream_t s) {
  const int64_t n = dst.numel();
  const int threads = 256;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>((n + threads - 1) / threads, 4096));
  switch (dst.dtype()) {
    case DType::kF32:
      convert_kernel<F><<<blocks, threads, 0, s>>>(src, dst.data<float>(), n);
      break;
    case DType::kBF16:
      convert_kernel<F><<<blocks, threads, 0, s>>>(src, static_cast<__nv_bfloat16*>(dst.raw()), n);
      break;
    default:
      convert_kernel<F><<<blocks, threads, 0, s>>>(src, static_cast<__half*>(dst.raw()), n);
  }
  SGL_CUDA_CHECK_LAUNCH();
}

}  // namespace

void convert_stored(const void* src, StoredFormat format, const Tensor& dst,
                    backend::Stream stream) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  cudaStream_t s = backend::cuda::native_stream(stream);
  stored_values::visit_format(
      format, [&](auto tag) { launch_format<decltype(tag)::value>(bytes, dst, s); });
}

}  // namespace sgl::kernels::cuda
