// argmax_rows: argument checks, the CPU loop, the CUDA launcher.
#include "kernels/argmax.h"

#include "kernels/check_args.h"
#ifdef SGL_WITH_CUDA
#include "kernels/cuda/cuda_argmax.h"
#endif

namespace sgl::kernels {
namespace {

void argmax_rows_cpu(const Tensor& logits, const Tensor& out, const Tensor& id_map) {
  const int64_t rows = logits.size(0), vocab = logits.size(1), stride = logits.stride(0);
  const float* x = logits.data<float>();
  int32_t* ids = out.data<int32_t>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * stride;
    int64_t best = -1;
    for (int64_t i = 0; i < vocab; ++i) {
      if (row[i] == row[i] && (best < 0 || row[i] > row[best])) best = i;  // NaN never wins
    }
    const auto index = static_cast<int32_t>(best < 0 ? 0 : best);
    ids[r] = id_map.defined() ? id_map.data<int32_t>()[index] : index;
  }
}

}  // namespace

void argmax_rows(const Tensor& logits, const Tensor& out, backend::Stream stream,
                 const Tensor& id_map) {
  SGL_CHECK(logits.dtype() == DType::kF32 && logits.ndim() == 2 && logits.size(1) > 0)
      << "argmax_rows: logits must be f32 [rows, V > 0], got " << logits.shape_string();
  detail::check_last_dim_contiguous(logits, "argmax_rows");
  SGL_CHECK(out.dtype() == DType::kI32 && out.ndim() == 1 && out.size(0) == logits.size(0) &&
            out.is_contiguous())
      << "argmax_rows: out must be i32 [" << logits.size(0) << "], got " << out.shape_string();
  SGL_CHECK(logits.size(0) <= 65535 && logits.size(1) <= INT32_MAX)
      << "argmax_rows: " << logits.shape_string() << " (at most 65535 rows)";
  detail::check_same_device(logits, out, "argmax_rows");
  if (id_map.defined()) {
    SGL_CHECK(id_map.dtype() == DType::kI32 && id_map.numel() == logits.size(1) &&
              id_map.is_contiguous())
        << "argmax_rows: id_map must be i32 with " << logits.size(1) << " values, got "
        << id_map.shape_string();
    detail::check_same_device(logits, id_map, "argmax_rows");
  }
  if (logits.size(0) == 0) return;
  if (logits.device().is_cpu()) return argmax_rows_cpu(logits, out, id_map);
#ifdef SGL_WITH_CUDA
  cuda::argmax_rows(logits, out, id_map, stream);
#else
  detail::no_cuda("argmax_rows");
#endif
}

}  // namespace sgl::kernels
