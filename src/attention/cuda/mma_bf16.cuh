// PTX wrappers the flash attention kernels build on: the bf16 tensor-core MMA, ldmatrix fragment
// loads, 16-byte cp.async with zero-fill, fast exp2. (The MMA itself and its fragment layouts:
// kernels/cuda/common/mma_m16n8k16.cuh; the loads: kernels/cuda/common/ldmatrix_cp_async.cuh.)
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/cuda/common/ldmatrix_cp_async.cuh"
#include "kernels/cuda/common/mma_m16n8k16.cuh"

namespace sgl::attention::cuda {

using kernels::cuda::cp_async_16;
using kernels::cuda::cp_async_commit;
using kernels::cuda::cp_async_wait;
using kernels::cuda::ld_shared_16;
using kernels::cuda::ldmatrix_x4;
using kernels::cuda::ldmatrix_x4_trans;
using kernels::cuda::mma_bf16_16816;
using kernels::cuda::pack_bf16x2;
using kernels::cuda::shared_address;
using kernels::cuda::st_shared_16;

// 2^x with the SFU (ex2.approx: 2^-inf = +0).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace sgl::attention::cuda
