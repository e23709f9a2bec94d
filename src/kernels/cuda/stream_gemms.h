// StreamGemms: the per-stream GEMM state kept in a CudaStream's GEMM slot
// (backend/stream_slot.h): the library GEMM's plans, our Hopper GEMM's device facts and the
// device's SM count (the GEMV and the sampling kernel size their grids by it).
#pragma once

#include "backend/cuda/cuda_runtime.h"
#include "backend/stream.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/hopper_gemm.h"

namespace sgl::kernels::cuda {

struct StreamGemms {
  StreamGemms(void* workspace, size_t workspace_bytes, int device_index)
      : library(workspace, workspace_bytes),
        hopper(device_index),
        sm_count(backend::cuda::multiprocessor_count(device_index)) {}

  // The instance of `stream` (a CudaStream's handle), made on first call.
  static StreamGemms& of(backend::Stream stream);

  CublasLtGemm library;
  HopperGemm hopper;
  const int sm_count;
  // Whether linear() sends 17-256 tokens to `hopper` (--linear-backend hopper); set before
  // the stream's first forward pass.
  bool hopper_for_linear = false;
};

}  // namespace sgl::kernels::cuda
