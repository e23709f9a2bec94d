// CUDA launcher of argmax_rows (declared without CUDA headers); arguments already validated.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels::cuda {

// id_map: undefined, or i32 [V] (kernels/argmax.h).
void argmax_rows(const Tensor& logits, const Tensor& out, const Tensor& id_map,
                 backend::Stream stream);

}  // namespace sgl::kernels::cuda
