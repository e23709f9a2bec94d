// TMA tensor maps for bf16 row-major matrices, encoded through the driver's
// cuTensorMapEncodeTiled (reached via the runtime's driver entry point, so nothing links
// libcuda).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace sgl::kernels::cuda {

// Encodes maps; construction looks the driver function up once.
class TensorMapEncoder {
 public:
  TensorMapEncoder();

  // A 2-D map over `rows` x `cols` bf16 elements at `base` (16-byte aligned), rows
  // `row_stride` elements apart (row_stride * 2 a multiple of 16), read as boxes of
  // `box_rows` x 64 columns (128 bytes) with 128-byte swizzling, the layout a K-major wgmma
  // operand wants (common/hopper_async.cuh). Boxes reaching past the matrix read zeros.
  CUtensorMap bf16_rows_sw128(const void* base, int64_t rows, int64_t cols, int64_t row_stride,
                              int box_rows) const;

 private:
  void* encode_ = nullptr;  // PFN_cuTensorMapEncodeTiled_v12000
};

}  // namespace sgl::kernels::cuda
