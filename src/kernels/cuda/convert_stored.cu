// CUDA stored-format conversion: a grid-stride loop over the destination, reading stored bytes
// one at a time (the source is a staging copy of unknown alignment; this runs once per weight at
// load, far below the PCIe copy in cost).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "kernels/cuda/cuda_convert_stored.h"

namespace sgl::kernels::cuda {
namespace {

__device__ __forceinline__ unsigned short load_u16(const unsigned char* p) {
  return static_cast<unsigned short>(p[0] | (p[1] << 8));
}

template <StoredFormat F>
__device__ __forceinline__ float load_value(const unsigned char* src, int64_t i) {
  if constexpr (F == StoredFormat::kF32) {
    const unsigned char* p = src + 4 * i;
    return __uint_as_float(p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<unsigned>(p[3]) << 24));
  } else if constexpr (F == StoredFormat::kF16) {
    return __half2float(__ushort_as_half(load_u16(src + 2 * i)));
  } else if constexpr (F == StoredFormat::kBF16) {
    return __uint_as_float(static_cast<unsigned>(load_u16(src + 2 * i)) << 16);
  } else {
    const unsigned char* block = src + 34 * (i / 32);
    const float d = __half2float(__ushort_as_half(load_u16(block)));
    return static_cast<float>(static_cast<signed char>(block[2 + i % 32])) * d;
  }
}

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
__global__ void convert_kernel(const unsigned char* src, T* dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = store_as<T>(load_value<F>(src, i));
  }
}

template <StoredFormat F>
void launch_format(const unsigned char* src, const Tensor& dst, cudaStream_t s) {
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
  const auto* bytes = static_cast<const unsigned char*>(src);
  cudaStream_t s = backend::cuda::native_stream(stream);
  switch (format) {
    case StoredFormat::kF32:
      return launch_format<StoredFormat::kF32>(bytes, dst, s);
    case StoredFormat::kF16:
      return launch_format<StoredFormat::kF16>(bytes, dst, s);
    case StoredFormat::kBF16:
      return launch_format<StoredFormat::kBF16>(bytes, dst, s);
    case StoredFormat::kQ8_0:
      return launch_format<StoredFormat::kQ8_0>(bytes, dst, s);
  }
}

}  // namespace sgl::kernels::cuda
