// The KV cache formats the CUDA attention kernels read and write: bf16, or FP8 codes
// (--kv-cache-dtype fp8_e4m3 / fp8_e5m2) standing for float(code) * the layer's scale
// (attention/kv_pool.h's KvScales). The flash kernels copy FP8 rows into a staging tile and
// widen them to the bf16 tiles their MMAs read (KvTileGather, smem_tile.cuh).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "core/dtype.h"

namespace sgl::attention::cuda {

enum class KvFormat { kBF16, kE4M3, kE5M2 };

template <KvFormat kFormat>
inline constexpr bool kIsFp8 = kFormat != KvFormat::kBF16;

// Bytes of one stored element.
template <KvFormat kFormat>
inline constexpr int kKvElementBytes = kIsFp8<kFormat> ? 1 : 2;

// The format of a KV pool of `dtype` (bf16, f8e4m3 or f8e5m2).
inline KvFormat kv_format_of(DType dtype) {
  return dtype == DType::kF8E4M3   ? KvFormat::kE4M3
         : dtype == DType::kF8E5M2 ? KvFormat::kE5M2
                                   : KvFormat::kBF16;
}

template <KvFormat kFormat>
__device__ __forceinline__ __nv_fp8_interpretation_t fp8_interpretation() {
  return kFormat == KvFormat::kE4M3 ? __NV_E4M3 : __NV_E5M2;
}

// Eight FP8 codes (8 bytes, element 0 lowest) as eight bf16 values (16 bytes), each
// float(code) * scale rounded to bf16 (exact at scale 1: every code is a bf16 value).
template <KvFormat kFormat>
__device__ __forceinline__ uint4 widen_fp8x8(uint2 codes, float scale) {
  uint32_t out[4];
  const uint32_t words[2] = {codes.x, codes.y};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const auto pair = static_cast<__nv_fp8x2_storage_t>(words[i / 2] >> (16 * (i % 2)));
    const __half2 h(__nv_cvt_fp8x2_to_halfraw2(pair, fp8_interpretation<kFormat>()));
    const float2 f = __half22float2(h);
    const __nv_bfloat162 b = __floats2bfloat162_rn(f.x * scale, f.y * scale);
    out[i] = *reinterpret_cast<const uint32_t*>(&b);
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// Eight bf16 values (16 bytes) as eight FP8 codes of value / scale (round to nearest even,
// saturated to the largest finite value, as the host's float_to_fp8_* in core/fp8.h).
template <KvFormat kFormat>
__device__ __forceinline__ uint2 narrow_bf16x8(uint4 values, float inverse_scale) {
  const uint32_t words[4] = {values.x, values.y, values.z, values.w};
  uint32_t out[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&words[i]));
    const __nv_fp8x2_storage_t pair =
        __nv_cvt_float2_to_fp8x2(make_float2(f.x * inverse_scale, f.y * inverse_scale),
                                 __NV_SATFINITE, fp8_interpretation<kFormat>());
    out[i / 2] |= static_cast<uint32_t>(pair) << (16 * (i % 2));
  }
  return make_uint2(out[0], out[1]);
}

// Stores a 16-byte chunk of eight bf16 values at element `element` of a cache of kFormat, and
// leaves `chunk` as what the cache reads back (FP8: the values rounded to their codes).
template <KvFormat kFormat>
__device__ __forceinline__ void store_kv_chunk(void* cache, int64_t element, uint4& chunk,
                                               float scale) {
  if constexpr (kIsFp8<kFormat>) {
    const uint2 codes = narrow_bf16x8<kFormat>(chunk, 1.f / scale);
    *reinterpret_cast<uint2*>(static_cast<uint8_t*>(cache) + element) = codes;
    chunk = widen_fp8x8<kFormat>(codes, scale);
  } else {
    *reinterpret_cast<uint4*>(static_cast<__nv_bfloat16*>(cache) + element) = chunk;
  }
}

// One value as its FP8 code of value / scale, and a code's value.
template <KvFormat kFormat>
__device__ __forceinline__ uint8_t narrow_fp8(float value, float inverse_scale) {
  return __nv_cvt_float_to_fp8(value * inverse_scale, __NV_SATFINITE,
                               fp8_interpretation<kFormat>());
}
template <KvFormat kFormat>
__device__ __forceinline__ float widen_fp8(uint8_t code, float scale) {
  const __half_raw h = __nv_cvt_fp8_to_halfraw(code, fp8_interpretation<kFormat>());
  return __half2float(__half(h)) * scale;
}

}  // namespace sgl::attention::cuda
