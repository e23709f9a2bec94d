// Tensor fills: constants and reproducible pseudo-random values (dummy weights).
#pragma once

#include <cstdint>

#include "backend/stream.h"
#include "core/host_device.h"
#include "core/tensor.h"

namespace sgl::kernels {

// dst[i] = value, for a contiguous float tensor (f32, bf16, f16).
void fill_constant(const Tensor& dst, float value, backend::Stream stream);

// dst[i] = lo + (hi - lo) * u(seed, i) with u uniform in [0, 1) from a counter hash of (seed, i):
// the same values on every device and for any launch shape. Contiguous float tensors.
void fill_uniform(const Tensor& dst, float lo, float hi, uint64_t seed, backend::Stream stream);

// The hash behind fill_uniform, exposed for tests: a uniform in [0, 1) with 24 random bits.
SGL_HOST_DEVICE inline float uniform_from_hash(uint64_t seed, uint64_t i) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + i;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<float>(x >> 40) * 0x1.0p-24f;
}

}  // namespace sgl::kernels
