// Copies between tensors of any devices, with dtype conversion on the host.
#pragma once

#include "backend/stream.h"
#include "core/tensor.h"

namespace sgl::kernels {

// dst = src. Same shape; both contiguous. Same dtype for any device pair (async on `stream` for
// CUDA copies); a different dtype only host to host (f32/f16/bf16 conversions).
void copy(const Tensor& src, const Tensor& dst, backend::Stream stream);

// copy without waiting: a host destination of a CUDA copy holds the data only once the work
// queued on `stream` so far is done (wait for a backend::StreamEvent recorded after it). Same
// dtype only.
void copy_async(const Tensor& src, const Tensor& dst, backend::Stream stream);

// `bytes` bytes from src to dst, any devices (plain memcpy host to host). Like copy_async, a
// CUDA copy is only queued on `stream`; pinned host memory makes it truly asynchronous.
void copy_bytes_async(const void* src, Device src_device, void* dst, Device dst_device,
                      size_t bytes, backend::Stream stream);

// dst[:, column : column + src.size(1)] = src: a 2-D tensor written into a range of a wider
// one's columns (concatenation along the last dim, as EAGLE's fc input). Same dtype and device;
// src contiguous, dst rows contiguous (a row stride of dst.size(1)). Queued on `stream`.
void copy_columns(const Tensor& src, const Tensor& dst, int64_t column, backend::Stream stream);

// Fills a contiguous tensor with zeros.
void zero(const Tensor& dst, backend::Stream stream);

}  // namespace sgl::kernels
