// CUDA launcher of argmax_rows (declared without CUDA headers); arguments already validated.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels::cuda {

void argmax_rows(const Tensor& logits, const Tensor& out, backend::Stream stream);

}  // namespace sgl::kernels::cuda
