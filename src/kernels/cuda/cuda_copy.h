// Raw CUDA copies and fills used by kernels/copy.cpp (declared without CUDA headers).
#pragma once

#include <cstddef>

#include "backend/stream.h"
#include "core/device.h"

namespace sgl::kernels::cuda {

// Copies between any two devices, ordered on `stream`; with `wait_for_host`, a host destination
// is complete on return.
void copy_bytes(const void* src, Device src_device, void* dst, Device dst_device, size_t bytes,
                backend::Stream stream, bool wait_for_host);
// `rows` rows of `row_bytes` bytes, from src (a row every src_pitch bytes) to dst (every
// dst_pitch), on one device, ordered on `stream`.
void copy_rows_2d(const void* src, size_t src_pitch, void* dst, size_t dst_pitch, size_t row_bytes,
                  size_t rows, backend::Stream stream);
void zero_bytes(void* dst, size_t bytes, backend::Stream stream);

}  // namespace sgl::kernels::cuda
