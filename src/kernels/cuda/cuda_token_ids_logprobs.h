// CUDA launcher of token_ids_logprobs (declared without CUDA headers); arguments validated.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels::cuda {

void token_ids_logprobs(const Tensor& logits, const Tensor& offsets, const Tensor& ids,
                        const Tensor& out, backend::Stream stream);

}  // namespace sgl::kernels::cuda
