// Raw CUDA copies and fills used by kernels/copy.cpp (declared without CUDA headers).
#pragma once

#include <cstddef>

#include "backend/stream.h"
#include "core/device.h"

namespace sgl::kernels::cuda {

// Copies between any two devices. Host destinations are complete on return; others are
// ordered on `stream`.
void copy_bytes(const void* src, Device src_device, void* dst, Device dst_device, size_t bytes,
                backend::Stream stream);
void zero_bytes(void* dst, size_t bytes, backend::Stream stream);

}  // namespace sgl::kernels::cuda
