#include "sampling/nan_logits.h"

#include <cmath>

#include "core/check.h"

namespace sgl::sampling {

int64_t replace_nan_logits(const Tensor& logits) {
  SGL_CHECK(logits.device().is_cpu() && logits.dtype() == DType::kF32 && logits.ndim() == 2 &&
            logits.stride(1) == 1)
      << "replace_nan_logits: host f32 [rows, vocab], got " << logits.shape_string();
  const int64_t rows = logits.size(0), vocab = logits.size(1);
  int64_t with_nan = 0;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = logits.data<float>() + r * logits.stride(0);
    bool found = false;
    for (int64_t v = 0; v < vocab; ++v) {
      if (std::isnan(row[v])) {
        row[v] = kNanLogitReplacement;
        found = true;
      }
    }
    with_nan += found;
  }
  return with_nan;
}

}  // namespace sgl::sampling
