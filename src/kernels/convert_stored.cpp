// Stored-format conversion: dispatch, sizes, and the CPU conversion.
#include "kernels/convert_stored.h"

#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "kernels/check_args.h"
#ifdef SGL_WITH_CUDA
#include "kernels/cuda/cuda_convert_stored.h"
#endif

namespace sgl::kernels {
namespace {

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

float load_value(const uint8_t* src, StoredFormat format, int64_t i) {
  switch (format) {
    case StoredFormat::kF32: {
      float v;
      std::memcpy(&v, src + 4 * i, sizeof v);
      return v;
    }
    case StoredFormat::kF16:
      return f16_to_float(load_u16(src + 2 * i));
    case StoredFormat::kBF16:
      return bf16_to_float(load_u16(src + 2 * i));
    case StoredFormat::kQ8_0: {
      const uint8_t* block = src + 34 * (i / 32);
      return static_cast<float>(static_cast<int8_t>(block[2 + i % 32])) *
             f16_to_float(load_u16(block));
    }
  }
  return 0.f;
}

void convert_host(const uint8_t* src, StoredFormat format, const Tensor& dst) {
  const int64_t n = dst.numel();
  switch (dst.dtype()) {
    case DType::kF32: {
      float* out = dst.data<float>();
      for (int64_t i = 0; i < n; ++i) out[i] = load_value(src, format, i);
      break;
    }
    case DType::kBF16: {
      auto* out = static_cast<uint16_t*>(dst.raw());
      for (int64_t i = 0; i < n; ++i) out[i] = float_to_bf16(load_value(src, format, i));
      break;
    }
    default: {
      auto* out = static_cast<uint16_t*>(dst.raw());
      for (int64_t i = 0; i < n; ++i) out[i] = float_to_f16(load_value(src, format, i));
    }
  }
}

}  // namespace

std::string_view stored_format_name(StoredFormat format) {
  switch (format) {
    case StoredFormat::kF32:
      return "f32";
    case StoredFormat::kF16:
      return "f16";
    case StoredFormat::kBF16:
      return "bf16";
    case StoredFormat::kQ8_0:
      return "q8_0";
  }
  return "?";
}

int64_t stored_block_elems(StoredFormat format) { return format == StoredFormat::kQ8_0 ? 32 : 1; }

int64_t stored_block_bytes(StoredFormat format) {
  switch (format) {
    case StoredFormat::kF32:
      return 4;
    case StoredFormat::kF16:
    case StoredFormat::kBF16:
      return 2;
    case StoredFormat::kQ8_0:
      return 34;
  }
  return 0;
}

size_t stored_bytes(StoredFormat format, int64_t n) {
  const int64_t block = stored_block_elems(format);
  SGL_CHECK(n >= 0 && n % block == 0)
      << stored_format_name(format) << ": " << n << " values are not whole blocks of " << block;
  return static_cast<size_t>(n / block * stored_block_bytes(format));
}

void convert_stored(const void* src, StoredFormat format, const Tensor& dst,
                    backend::Stream stream) {
  const DType t = dst.dtype();
  SGL_CHECK(dst.is_contiguous() && (t == DType::kF32 || t == DType::kBF16 || t == DType::kF16))
      << "convert_stored: needs a contiguous float destination, got " << dst.shape_string() << " "
      << dtype_name(t);
  (void)stored_bytes(format, dst.numel());  // checks whole blocks
  if (dst.numel() == 0) return;
  if (dst.device().is_cpu()) return convert_host(static_cast<const uint8_t*>(src), format, dst);
#ifdef SGL_WITH_CUDA
  cuda::convert_stored(src, format, dst, stream);
#else
  (void)stream;
  detail::no_cuda("convert_stored");
#endif
}

}  // namespace sgl::kernels
