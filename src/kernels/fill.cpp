// Fill dispatch and the CPU fills.
#include "kernels/fill.h"

#include <cmath>

#include "core/check.h"
#include "core/half.h"
#include "kernels/check_args.h"
#ifdef SGL_WITH_CUDA
#include "kernels/cuda/cuda_fill.h"
#endif

namespace sgl::kernels {
namespace {

void check_fillable(const Tensor& dst, const char* op) {
  const DType t = dst.dtype();
  SGL_CHECK(dst.is_contiguous() && (t == DType::kF32 || t == DType::kBF16 || t == DType::kF16))
      << op << ": needs a contiguous float tensor, got " << dst.shape_string() << " "
      << dtype_name(dst.dtype());
}

// Writes value(i) for every element of a host tensor.
template <typename ValueOf>
void fill_host(const Tensor& dst, ValueOf value_of) {
  const int64_t n = dst.numel();
  switch (dst.dtype()) {
    case DType::kF32: {
      float* p = dst.data<float>();
      for (int64_t i = 0; i < n; ++i) p[i] = value_of(i);
      break;
    }
    case DType::kBF16: {
      auto* p = static_cast<uint16_t*>(dst.raw());
      for (int64_t i = 0; i < n; ++i) p[i] = float_to_bf16(value_of(i));
      break;
    }
    default: {
      auto* p = static_cast<uint16_t*>(dst.raw());
      for (int64_t i = 0; i < n; ++i) p[i] = float_to_f16(value_of(i));
    }
  }
}

}  // namespace

void fill_constant(const Tensor& dst, float value, backend::Stream stream) {
  check_fillable(dst, "fill_constant");
  if (dst.device().is_cpu()) return fill_host(dst, [value](int64_t) { return value; });
#ifdef SGL_WITH_CUDA
  cuda::fill_constant(dst, value, stream);
#else
  detail::no_cuda("fill_constant");
#endif
}

void fill_uniform(const Tensor& dst, float lo, float hi, uint64_t seed, backend::Stream stream) {
  check_fillable(dst, "fill_uniform");
  if (dst.device().is_cpu()) {
    return fill_host(dst, [=](int64_t i) {
      // One fused multiply-add, as the CUDA kernel computes it: equal values on both devices.
      return std::fma(hi - lo, uniform_from_hash(seed, static_cast<uint64_t>(i)), lo);
    });
  }
#ifdef SGL_WITH_CUDA
  cuda::fill_uniform(dst, lo, hi, seed, stream);
#else
  detail::no_cuda("fill_uniform");
#endif
}

}  // namespace sgl::kernels
