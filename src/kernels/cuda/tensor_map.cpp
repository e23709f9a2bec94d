#include "kernels/cuda/tensor_map.h"

#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include "backend/cuda/cuda_check.h"
#include "core/check.h"

namespace sgl::kernels::cuda {

TensorMapEncoder::TensorMapEncoder() {
  cudaDriverEntryPointQueryResult found{};
  SGL_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &encode_, 12000,
                                                  cudaEnableDefault, &found));
  SGL_CHECK(found == cudaDriverEntryPointSuccess && encode_ != nullptr)
      << "the CUDA driver has no cuTensorMapEncodeTiled (needs a CUDA 12+ driver)";
}

CUtensorMap TensorMapEncoder::bf16_rows_sw128(const void* base, int64_t rows, int64_t cols,
                                              int64_t row_stride, int box_rows) const {
  SGL_CHECK(reinterpret_cast<uintptr_t>(base) % 16 == 0 && (row_stride * 2) % 16 == 0 &&
            box_rows >= 1 && box_rows <= 256 && rows >= 1 && cols >= 1)
      << "tensor map: base or row stride not 16-byte aligned, or a bad box";
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(row_stride) * 2};  // bytes, dims 1..
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult result = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(encode_)(
      &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  SGL_CHECK(result == CUDA_SUCCESS)
      << "cuTensorMapEncodeTiled failed: " << static_cast<int>(result);
  return map;
}

}  // namespace sgl::kernels::cuda
