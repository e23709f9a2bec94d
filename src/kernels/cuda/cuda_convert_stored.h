// CUDA stored-format conversion used by kernels/convert_stored.cpp (declared without CUDA
// headers); arguments validated by the dispatcher.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"
#include "kernels/convert_stored.h"

namespace sgl::kernels::cuda {

void convert_stored(const void* src, StoredFormat format, const Tensor& dst,
                    backend::Stream stream);

}  // namespace sgl::kernels::cuda
