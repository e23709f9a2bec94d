// Runs a templated launcher with the C++ element type of a float DType (f32 or bf16).
#pragma once

#include <cuda_bf16.h>

#include "core/check.h"
#include "core/dtype.h"

#define SGL_DISPATCH_FLOAT(dtype, T, ...)                                            \
  do {                                                                               \
    if ((dtype) == ::sgl::DType::kF32) {                                             \
      using T = float;                                                               \
      __VA_ARGS__;                                                                   \
    } else if ((dtype) == ::sgl::DType::kBF16) {                                     \
      using T = __nv_bfloat16;                                                       \
      __VA_ARGS__;                                                                   \
    } else {                                                                         \
      SGL_CHECK(false) << "CUDA op: unsupported dtype " << ::sgl::dtype_name(dtype); \
    }                                                                                \
  } while (false)
