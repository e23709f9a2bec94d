// cuda_data_type: a DType as the cudaDataType_t that cuBLAS and cuBLASLt take.
#pragma once

#include <library_types.h>

#include "core/check.h"
#include "core/dtype.h"

namespace sgl::kernels::cuda {

inline cudaDataType_t cuda_data_type(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return CUDA_R_32F;
    case DType::kBF16:
      return CUDA_R_16BF;
    case DType::kF16:
      return CUDA_R_16F;
    default:
      SGL_CHECK(false) << "cuBLAS: unsupported dtype " << dtype_name(dtype);
      return CUDA_R_32F;
  }
}

}  // namespace sgl::kernels::cuda
