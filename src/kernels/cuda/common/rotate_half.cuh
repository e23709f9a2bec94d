// Rotate-half RoPE of one (i, i + D / 2) pair, the arithmetic every RoPE kernel shares.
#pragma once

#include "kernels/cuda/common/cuda_types.cuh"

namespace sgl::kernels::cuda {

// The pair (a, b) = (x[i], x[i + D / 2]) rotated: (a c - b s, b c + a s), rounded once. The
// multiply-adds are spelled out so that every kernel rotating a pair gets the same bits
// (contraction left to the compiler may differ between call sites).
template <typename T>
__device__ __forceinline__ void rotate_half_values(float a, float b, float c, float s, T& lo,
                                                   T& hi) {
  lo = from_float<T>(__fmaf_rn(a, c, -__fmul_rn(b, s)));
  hi = from_float<T>(__fmaf_rn(b, c, __fmul_rn(a, s)));
}

// dst[i], dst[i + half] = the pair src[i], src[i + half] rotated by the angle whose cos and sin
// are c and s (or cos_sin_row[i] and cos_sin_row[half + i], a [D] row: cos | sin); in f32,
// rounded once. dst may be src.
template <typename T>
__device__ __forceinline__ void rotate_half_pair(const T* src, T* dst, float c, float s, int i,
                                                 int half) {
  T lo, hi;
  rotate_half_values(to_float(src[i]), to_float(src[i + half]), c, s, lo, hi);
  dst[i] = lo;
  dst[i + half] = hi;
}

template <typename T>
__device__ __forceinline__ void rotate_half_pair(const T* src, T* dst, const float* cos_sin_row,
                                                 int i, int half) {
  rotate_half_pair(src, dst, cos_sin_row[i], cos_sin_row[half + i], i, half);
}

}  // namespace sgl::kernels::cuda
