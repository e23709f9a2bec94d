// Programmatic dependent launch (Hopper): a kernel launched with launch_pdl may start while the
// kernel before it on the stream is still finishing, so its launch and prologue (index math,
// loads of weights nothing upstream writes) overlap the previous kernel's tail. The contract:
//   - a kernel launched with launch_pdl calls pdl_wait() before it touches memory that the
//     kernel before it writes, or memory that kernel reads and it writes (activations, the KV
//     rows just stored, outputs);
//   - pdl_launch_dependents() lets the next kernel start launching; without it the next kernel
//     starts when this one ends, as usual. The next kernel launches once every CTA of this one
//     has called it or exited, so a call late in a CTA exposes the launch latency (~1 us);
//     call it right after the CTA's pdl_wait() unless placing the next kernel early costs
//     (below), and never before it (two exceptions below); and let at least one CTA wait, so
//     the grid's completion implies its predecessor's.
// The second rule makes a kernel's start imply that every kernel two or more back on the stream
// has completed, so data only those wrote (batch metadata, older KV, weights and tables) may be
// read before the wait: flash decode starts its KV tiles there.
// (Calling it before the wait measured badly: in the fused add + RMSNorm, so the linear layer
// after it launched during the GEMV before, batches 1 and 8 gained a little and batch 16 lost
// far more; in the merge kernel, while the GEMV after it ran two blocks per SM, every batch was
// slower: docs/perf-log/cuda-session-07.md. The exceptions, where it pays: the merge kernel
// after a few flash decode CTAs (flash_decode.cu) and the fused add + RMSNorm of one row of up
// to 2048 values (norm_rope.cu); the GEMV either launches reads only weights before its own
// wait, which the missing guarantee cannot touch.)
// Launching early has a cost where the next kernel's CTAs take SMs that this grid's unplaced
// CTAs or a heavy predecessor still need: a grid sized to one wave (the GEMV) that launches
// while flash decode's CTAs hold SMs finds those SMs full and runs a second wave: dropping the
// merge kernel between flash decode and the o projection made batch 1 slower
// (docs/perf-log/cuda-session-06.md).
// Works inside CUDA graph capture (programmatic edges). Both are no-ops before sm_90.
// The launch helpers below (launch_pdl, launch_pdl_clusters; launch_clusters without PDL) all
// go through one cudaLaunchKernelEx wrapper.
#pragma once

#include <cuda_runtime.h>

#include "backend/cuda/cuda_check.h"

namespace sgl::kernels::cuda {

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// The launch attribute that groups a grid's CTAs into thread-block clusters of `dims`.
inline cudaLaunchAttribute cluster_dims_attribute(dim3 dims) {
  cudaLaunchAttribute attribute;
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = dims.x;
  attribute.val.clusterDim.y = dims.y;
  attribute.val.clusterDim.z = dims.z;
  return attribute;
}

namespace detail {

// cudaLaunchKernelEx with programmatic stream serialization and/or clusters of `*cluster`.
template <typename... Params, typename... Args>
void launch_ex(void (*kernel)(Params...), dim3 grid, bool programmatic, const dim3* cluster,
               dim3 block, size_t smem, cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attribute[2];
  unsigned count = 0;
  if (programmatic) {
    attribute[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[count++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster != nullptr) attribute[count++] = cluster_dims_attribute(*cluster);
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = count;
  SGL_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

}  // namespace detail

// kernel<<<grid, block, smem, stream>>>(args...) with programmatic stream serialization.
template <typename... Params, typename... Args>
void launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                Args&&... args) {
  detail::launch_ex(kernel, grid, true, nullptr, block, smem, stream, std::forward<Args>(args)...);
}

// The same on a grid of thread-block clusters of `cluster` CTAs (grid divisible by it).
template <typename... Params, typename... Args>
void launch_pdl_clusters(void (*kernel)(Params...), dim3 grid, dim3 cluster, dim3 block,
                         size_t smem, cudaStream_t stream, Args&&... args) {
  detail::launch_ex(kernel, grid, true, &cluster, block, smem, stream, std::forward<Args>(args)...);
}

// kernel on a grid of thread-block clusters, ordinarily serialized on the stream (for kernels
// that do not call pdl_wait()).
template <typename... Params, typename... Args>
void launch_clusters(void (*kernel)(Params...), dim3 grid, dim3 cluster, dim3 block, size_t smem,
                     cudaStream_t stream, Args&&... args) {
  detail::launch_ex(kernel, grid, false, &cluster, block, smem, stream,
                    std::forward<Args>(args)...);
}

}  // namespace sgl::kernels::cuda
