// Validation helpers shared by the op dispatchers (host side, before any backend runs).
#pragma once

#include "core/tensor.h"

namespace sgl::kernels::detail {

inline void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  SGL_CHECK(a.device() == b.device())
      << op << ": tensors on " << a.device().to_string() << " and " << b.device().to_string();
}

inline void check_last_dim_contiguous(const Tensor& t, const char* op) {
  SGL_CHECK(t.stride(-1) == 1) << op << ": last dim must be contiguous, shape " << t.shape_string();
}

[[noreturn]] void no_cuda(const char* op);

}  // namespace sgl::kernels::detail
