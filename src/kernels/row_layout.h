// RowLayout: addresses the rows (last dim) of a strided tensor of rank <= 4 by a flat row index.
// Plain data so both CPU loops and CUDA kernels can use it.
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "core/tensor.h"

namespace sgl::kernels {

struct RowLayout {
  int64_t num_rows = 0;
  int64_t row_len = 0;
  int lead_dims = 0;        // rank - 1
  int64_t sizes[3] = {};    // leading dim sizes
  int64_t strides[3] = {};  // leading dim strides, elements

  // Element offset of the first element of row `r`.
  SGL_HOST_DEVICE int64_t offset(int64_t r) const {
    int64_t off = 0;
    // Unrolled over the largest rank, so a kernel indexes sizes and strides with constants: a
    // dynamic index puts the by-value parameter in local memory, whose traffic made a
    // warp-per-row kernel (qk_rms_norm) memory-bound at prefill sizes.
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int d = 2; d >= 0; --d) {
      if (d >= lead_dims) continue;
      int64_t idx = r % sizes[d];
      r /= sizes[d];
      off += idx * strides[d];
    }
    return off;
  }
};

}  // namespace sgl::kernels

namespace sgl::kernels {
inline RowLayout row_layout(const Tensor& t) {
  RowLayout layout;
  layout.row_len = t.size(-1);
  layout.lead_dims = t.ndim() - 1;
  layout.num_rows = 1;
  for (int d = 0; d < layout.lead_dims; ++d) {
    layout.sizes[d] = t.size(d);
    layout.strides[d] = t.stride(d);
    layout.num_rows *= t.size(d);
  }
  return layout;
}
}  // namespace sgl::kernels
