// CPU row gathers and scatters.
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

void scatter_rows(const Tensor& src, const Tensor& rows, const Tensor& dst) {
  const int32_t* row = rows.data<int32_t>();
  const size_t row_bytes = static_cast<size_t>(src.size(1)) * dtype_size(src.dtype());
  for (int64_t i = 0; i < src.size(0); ++i) {
    SGL_CHECK(row[i] >= 0 && row[i] < dst.size(0))
        << "scatter_rows: row " << row[i] << " of " << dst.size(0);
    std::memcpy(static_cast<char*>(dst.raw()) + row[i] * row_bytes,
                static_cast<const char*>(src.raw()) + i * row_bytes, row_bytes);
  }
}

}  // namespace sgl::kernels::cpu
