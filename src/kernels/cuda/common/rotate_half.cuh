// Rotate-half RoPE of one (i, i + D / 2) pair, the arithmetic every RoPE kernel shares.
#pragma once

#include "kernels/cuda/common/cuda_types.cuh"

namespace sgl::kernels::cuda {

// dst[i], dst[i + half] = the pair src[i], src[i + half] rotated by the angle whose cos and sin
// are c and s (or cos_sin_row[i] and cos_sin_row[half + i], a [D] row: cos | sin); in f32,
// rounded once. dst may be src.
template <typename T>
__device__ __forceinline__ void rotate_half_pair(const T* src, T* dst, float c, float s, int i,
                                                 int half) {
  const float a = to_float(src[i]), b = to_float(src[i + half]);
  dst[i] = from_float<T>(a * c - b * s);
  dst[i + half] = from_float<T>(b * c + a * s);
}

template <typename T>
__device__ __forceinline__ void rotate_half_pair(const T* src, T* dst, const float* cos_sin_row,
                                                 int i, int half) {
  rotate_half_pair(src, dst, cos_sin_row[i], cos_sin_row[half + i], i, half);
}

}  // namespace sgl::kernels::cuda
