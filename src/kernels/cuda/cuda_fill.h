// CUDA fills used by kernels/fill.cpp (declared without CUDA headers); arguments validated.
#pragma once

#include <cstdint>

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels::cuda {

void fill_constant(const Tensor& dst, float value, backend::Stream stream);
void fill_uniform(const Tensor& dst, float lo, float hi, uint64_t seed, backend::Stream stream);

}  // namespace sgl::kernels::cuda
