// CPU gather of each request's last token row.
#include <cstring>

#include "kernels/cpu/cpu_ops.h"

namespace sgl::kernels::cpu {

void gather_last_tokens(const Tensor& src, const Tensor& qo_indptr, const Tensor& out) {
  const int32_t* indptr = qo_indptr.data<int32_t>();
  const size_t row_bytes = static_cast<size_t>(src.size(1)) * dtype_size(src.dtype());
  const int64_t rows = src.size(0);
  for (int64_t b = 0; b < out.size(0); ++b) {
    const int64_t r = indptr[b + 1] - 1;
    SGL_CHECK(r >= 0 && r < rows) << "gather_last_tokens: row " << r << " of " << rows;
    std::memcpy(static_cast<char*>(out.raw()) + b * row_bytes,
                static_cast<const char*>(src.raw()) + r * row_bytes, row_bytes);
  }
}

}  // namespace sgl::kernels::cpu
