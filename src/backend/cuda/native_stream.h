// The cudaStream_t behind a CUDA Stream handle, for code that includes the CUDA headers.
#pragma once

#include <cuda_runtime.h>

#include "backend/stream.h"

namespace sgl::backend::cuda {

inline cudaStream_t native_stream(Stream stream) {
  return static_cast<cudaStream_t>(stream.native);
}

}  // namespace sgl::backend::cuda
