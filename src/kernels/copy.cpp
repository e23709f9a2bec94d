// Tensor copies across devices and host dtype conversion.
#include "kernels/copy.h"

#include <cstring>

#include "core/half.h"
#ifdef SGL_WITH_CUDA
#include "kernels/cuda/cuda_copy.h"
#endif
#include "kernels/check_args.h"

namespace sgl::kernels {
namespace {

float load_as_float(const void* base, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::kF32:
      return static_cast<const float*>(base)[i];
    case DType::kBF16:
      return bf16_to_float(static_cast<const uint16_t*>(base)[i]);
    case DType::kF16:
      return f16_to_float(static_cast<const uint16_t*>(base)[i]);
    default:
      SGL_CHECK(false) << "copy: cannot convert from " << dtype_name(dtype);
      return 0.f;
  }
}

void store_float(void* base, DType dtype, int64_t i, float v) {
  switch (dtype) {
    case DType::kF32:
      static_cast<float*>(base)[i] = v;
      break;
    case DType::kBF16:
      static_cast<uint16_t*>(base)[i] = float_to_bf16(v);
      break;
    case DType::kF16:
      static_cast<uint16_t*>(base)[i] = float_to_f16(v);
      break;
    default:
      SGL_CHECK(false) << "copy: cannot convert to " << dtype_name(dtype);
  }
}

void copy_same_dtype(const Tensor& src, const Tensor& dst, backend::Stream stream,
                     bool wait_for_host) {
  if (src.device().is_cpu() && dst.device().is_cpu()) {
    if (src.nbytes() > 0) std::memcpy(dst.raw(), src.raw(), src.nbytes());
    return;
  }
#ifdef SGL_WITH_CUDA
  cuda::copy_bytes(src.raw(), src.device(), dst.raw(), dst.device(), src.nbytes(), stream,
                   wait_for_host);
#else
  detail::no_cuda("copy");
#endif
}

void check_copy_shapes(const Tensor& src, const Tensor& dst) {
  SGL_CHECK(src.numel() == dst.numel() && src.is_contiguous() && dst.is_contiguous())
      << "copy: src " << src.shape_string() << " dst " << dst.shape_string();
}

}  // namespace

void copy_async(const Tensor& src, const Tensor& dst, backend::Stream stream) {
  check_copy_shapes(src, dst);
  SGL_CHECK(src.dtype() == dst.dtype()) << "copy_async: dtypes differ";
  copy_same_dtype(src, dst, stream, /*wait_for_host=*/false);
}

void copy(const Tensor& src, const Tensor& dst, backend::Stream stream) {
  check_copy_shapes(src, dst);
  if (src.dtype() != dst.dtype()) {
    SGL_CHECK(src.device().is_cpu() && dst.device().is_cpu())
        << "copy: dtype conversion " << dtype_name(src.dtype()) << " -> " << dtype_name(dst.dtype())
        << " is host-only";
    const int64_t n = src.numel();
    for (int64_t i = 0; i < n; ++i)
      store_float(dst.raw(), dst.dtype(), i, load_as_float(src.raw(), src.dtype(), i));
    return;
  }
  copy_same_dtype(src, dst, stream, /*wait_for_host=*/true);
}

void copy_bytes_async(const void* src, Device src_device, void* dst, Device dst_device,
                      size_t bytes, backend::Stream stream) {
  if (src_device.is_cpu() && dst_device.is_cpu()) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return;
  }
#ifdef SGL_WITH_CUDA
  cuda::copy_bytes(src, src_device, dst, dst_device, bytes, stream, /*wait_for_host=*/false);
#else
  (void)stream;
  detail::no_cuda("copy_bytes_async");
#endif
}

void copy_columns(const Tensor& src, const Tensor& dst, int64_t column, backend::Stream stream) {
  SGL_CHECK(src.ndim() == 2 && dst.ndim() == 2 && src.is_contiguous() && dst.is_contiguous() &&
            src.size(0) == dst.size(0) && column >= 0 && column + src.size(1) <= dst.size(1))
      << "copy_columns: src " << src.shape_string() << " into dst " << dst.shape_string()
      << " at column " << column;
  SGL_CHECK(src.dtype() == dst.dtype() && src.device() == dst.device())
      << "copy_columns: src and dst differ in dtype or device";
  const size_t element = dtype_size(src.dtype());
  const size_t row_bytes = static_cast<size_t>(src.size(1)) * element;
  const size_t dst_pitch = static_cast<size_t>(dst.size(1)) * element;
  char* out = static_cast<char*>(dst.raw()) + static_cast<size_t>(column) * element;
  if (src.device().is_cpu()) {
    const char* in = static_cast<const char*>(src.raw());
    for (int64_t r = 0; r < src.size(0); ++r) {
      std::memcpy(out + static_cast<size_t>(r) * dst_pitch, in + static_cast<size_t>(r) * row_bytes,
                  row_bytes);
    }
    return;
  }
#ifdef SGL_WITH_CUDA
  cuda::copy_rows_2d(src.raw(), row_bytes, out, dst_pitch, row_bytes,
                     static_cast<size_t>(src.size(0)), stream);
#else
  (void)stream;
  detail::no_cuda("copy_columns");
#endif
}

void zero(const Tensor& dst, backend::Stream stream) {
  SGL_CHECK(dst.is_contiguous()) << "zero: non-contiguous " << dst.shape_string();
  if (dst.device().is_cpu()) {
    if (dst.nbytes() > 0) std::memset(dst.raw(), 0, dst.nbytes());
    return;
  }
#ifdef SGL_WITH_CUDA
  cuda::zero_bytes(dst.raw(), dst.nbytes(), stream);
#else
  detail::no_cuda("zero");
#endif
}

}  // namespace sgl::kernels
