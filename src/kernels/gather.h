// Row gathers used around the LM head.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// out[b, :] = src[qo_indptr[b + 1] - 1, :]: each request's last token.
// src: [T, H] contiguous; qo_indptr: i32 [bs + 1]; out: [bs, H] contiguous.
void gather_last_tokens(const Tensor& src, const Tensor& qo_indptr, const Tensor& out,
                        backend::Stream stream);

}  // namespace sgl::kernels
