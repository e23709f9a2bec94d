// CPU per-request row pooling (the reference the CUDA kernel is checked against).
#include <cstdint>

#include "core/half.h"
#include "kernels/cpu/cpu_ops.h"

namespace sgl::kernels::cpu {
namespace {

float to_f32(float v) { return v; }
float to_f32(uint16_t bf16) { return bf16_to_float(bf16); }

// T: float (f32) or uint16_t (bf16 bits).
template <typename T>
void pool(const T* src, const int32_t* indptr, int64_t rows, int64_t h, int64_t bs, RowPool pool,
          float* out) {
  for (int64_t b = 0; b < bs; ++b) {
    const int64_t begin = indptr[b], end = indptr[b + 1];
    SGL_CHECK(begin >= 0 && begin < end && end <= rows)
        << "pool_rows: request " << b << " owns rows [" << begin << ", " << end << ") of " << rows;
    float* o = out + b * h;
    for (int64_t c = 0; c < h; ++c) o[c] = 0.f;
    for (int64_t r = pool == RowPool::kLast ? end - 1 : begin; r < end; ++r) {
      for (int64_t c = 0; c < h; ++c) o[c] += to_f32(src[r * h + c]);
    }
  }
}

}  // namespace

void pool_rows(const Tensor& src, const Tensor& qo_indptr, RowPool pool_kind, const Tensor& out) {
  const int32_t* indptr = qo_indptr.data<int32_t>();
  if (src.dtype() == DType::kF32) {
    pool(src.data<float>(), indptr, src.size(0), src.size(1), out.size(0), pool_kind,
         out.data<float>());
  } else {
    pool(static_cast<const uint16_t*>(src.raw()), indptr, src.size(0), src.size(1), out.size(0),
         pool_kind, out.data<float>());
  }
}

}  // namespace sgl::kernels::cpu
