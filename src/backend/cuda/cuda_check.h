// SGL_CUDA_CHECK: abort with file:line and CUDA's message when a runtime call fails.
#pragma once

#include <cuda_runtime.h>

#include "core/check.h"

#define SGL_CUDA_CHECK(expr)                                                                       \
  do {                                                                                             \
    cudaError_t sgl_cuda_err_ = (expr);                                                            \
    SGL_CHECK(sgl_cuda_err_ == cudaSuccess) << #expr << ": " << cudaGetErrorString(sgl_cuda_err_); \
  } while (false)

// After every kernel launch.
#define SGL_CUDA_CHECK_LAUNCH() SGL_CUDA_CHECK(cudaGetLastError())
