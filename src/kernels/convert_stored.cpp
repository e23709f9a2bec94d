// Stored-format conversion: dispatch, sizes, and the CPU conversion.
#include "kernels/convert_stored.h"

#include <type_traits>

#include "core/check.h"
#include "core/half.h"
#include "kernels/check_args.h"
#include "kernels/cpu/gguf_blocks.h"
#include "kernels/stored_values.h"
#ifdef SGL_WITH_CUDA
#include "kernels/cuda/cuda_convert_stored.h"
#endif

namespace sgl::kernels {
namespace {

// Value i of the plain floats (F32, F16, BF16) at `src`.
float plain_value(const uint8_t* src, StoredFormat format, int64_t i) {
  switch (format) {
    case StoredFormat::kF32:
      return stored_values::stored_value<StoredFormat::kF32>(src, i);
    case StoredFormat::kF16:
      return stored_values::stored_value<StoredFormat::kF16>(src, i);
    default:
      return stored_values::stored_value<StoredFormat::kBF16>(src, i);
  }
}

// out[i] = round(value i of the n values at `src`).
template <typename T, typename Round>
void convert_values(const uint8_t* src, StoredFormat format, int64_t n, T* out, Round round) {
  const cpu::BlockDecoder decode = cpu::block_decoder(format);
  if (decode == nullptr) {
    for (int64_t i = 0; i < n; ++i) out[i] = round(plain_value(src, format, i));
    return;
  }
  const int64_t elems = stored_block_elems(format), bytes = stored_block_bytes(format);
  float values[256];  // the largest block
  for (int64_t b = 0; b < n / elems; ++b, src += bytes, out += elems) {
    if constexpr (std::is_same_v<T, float>) {
      decode(src, out);  // f32 needs no rounding
    } else {
      decode(src, values);
      for (int64_t j = 0; j < elems; ++j) out[j] = round(values[j]);
    }
  }
}

void convert_host(const uint8_t* src, StoredFormat format, const Tensor& dst) {
  const int64_t n = dst.numel();
  auto* half = static_cast<uint16_t*>(dst.raw());
  switch (dst.dtype()) {
    case DType::kF32:
      return convert_values(src, format, n, dst.data<float>(), [](float v) { return v; });
    case DType::kBF16:
      return convert_values(src, format, n, half, [](float v) { return float_to_bf16(v); });
    default:
      return convert_values(src, format, n, half, [](float v) { return float_to_f16(v); });
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
    case StoredFormat::kQ4_0:
      return "q4_0";
    case StoredFormat::kQ4_1:
      return "q4_1";
    case StoredFormat::kQ5_0:
      return "q5_0";
    case StoredFormat::kQ5_1:
      return "q5_1";
    case StoredFormat::kQ8_0:
      return "q8_0";
    case StoredFormat::kQ2_K:
      return "q2_k";
    case StoredFormat::kQ3_K:
      return "q3_k";
    case StoredFormat::kQ4_K:
      return "q4_k";
    case StoredFormat::kQ5_K:
      return "q5_k";
    case StoredFormat::kQ6_K:
      return "q6_k";
  }
  return "?";
}

int64_t stored_block_elems(StoredFormat format) { return stored_values::block_elems(format); }

int64_t stored_block_bytes(StoredFormat format) { return stored_values::block_bytes(format); }

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
