// Row gathers used around the LM head, and the scatter back.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// out[b, :] = src[qo_indptr[b + 1] - 1, :]: each request's last token.
// src: [T, H] contiguous; qo_indptr: i32 [bs + 1]; out: [bs, H] contiguous.
void gather_last_tokens(const Tensor& src, const Tensor& qo_indptr, const Tensor& out,
                        backend::Stream stream);

// dst[rows[i], :] = src[i, :]: rows written back to where they belong (EAGLE's per-request draft
// state). src: [n, W] contiguous; rows: i32 [n], distinct, each in [0, dst.size(0)); dst: [R, W]
// contiguous, same dtype and device.
void scatter_rows(const Tensor& src, const Tensor& rows, const Tensor& dst, backend::Stream stream);

}  // namespace sgl::kernels
