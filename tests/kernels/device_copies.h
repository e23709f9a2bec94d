// Host <-> device copies with dtype conversion for the CUDA kernel tests (conversion happens on
// the host, as kernels::copy requires).
#pragma once

#include "core/allocator.h"
#include "core/buffer.h"
#include "kernels/copy.h"

namespace sgl::kernels::test {

// A device copy of host f32 values, converted to `dtype`.
inline Buffer to_device_as(const Tensor& host_f32, DType dtype, Allocator& device,
                           backend::Stream stream) {
  Buffer staged(cpu_allocator(), dtype, host_f32.shape());
  copy(host_f32, staged, backend::Stream::cpu());
  Buffer dev(device, dtype, host_f32.shape());
  copy(staged, dev, stream);
  return dev;
}

// A host f32 copy of a device tensor of any dtype.
inline Buffer to_host_f32(const Tensor& dev, backend::Stream stream) {
  Buffer staged(cpu_allocator(), dev.dtype(), dev.shape());
  copy(dev, staged, stream);
  Buffer out(cpu_allocator(), DType::kF32, dev.shape());
  copy(staged, out, backend::Stream::cpu());
  return out;
}

}  // namespace sgl::kernels::test
