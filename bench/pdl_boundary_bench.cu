// What a kernel boundary costs in a chain of programmatically launched kernels (the decode step's
// shape: one-wave grids, each reading the previous kernel's small output), three ways:
//   wait  griddepcontrol.wait, the chain's rule (kernels/cuda/common/pdl.cuh)
//   flag  an arrival count the producer's CTAs release and the consumer polls (acquire): what a
//         grid barrier or a fine-grained dependency inside a persistent kernel would use
//   none  no wait at all (a lower bound; the results are wrong)
// Each kernel first streams its own weight share (bytes nobody writes, before its wait), then
// reads the whole previous activation vector and writes its share of the next. Prints
// microseconds per kernel over a CUDA graph of 480 of them, by grid size and weight bytes per
// CTA (the chain needs sm_90: before it the launches are plain and `wait` waits nothing).
// Measured numbers: docs/perf-log/2026-12-03-route-fold-and-boundaries.md.
//   cmake --build --preset cuda --target pdl_boundary_bench && build/cuda/bench/pdl_boundary_bench
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "cuda_bench.cuh"

namespace {

enum Mode { kWait, kFlag, kNone };

constexpr int kThreads = 256;
constexpr int kVector = 2048;                       // f32 activations each kernel reads whole
constexpr int kKernels = 480;                       // a 48-layer step of 10 kernels
constexpr size_t kWeightBytes = size_t{256} << 20;  // cycled through: no L2 reuse

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void add_release(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

template <Mode kMode>
__global__ void __launch_bounds__(kThreads)
    step_kernel(const float* in, float* out, const uint4* weights, int weight_vectors,
                const unsigned* arrived_before, unsigned* arrived, unsigned ctas) {
  // Up to 8 of this thread's weight vectors in flight before the wait, as the GEMV does.
  const uint4* w = weights + static_cast<size_t>(blockIdx.x) * weight_vectors;
  uint4 early[8];
  int n = 0;
  for (int i = threadIdx.x; i < weight_vectors && n < 8; i += kThreads)
    early[n++] = load_streaming(w + i);
  if (kMode == kWait) {
#if __CUDA_ARCH__ >= 900  // programmatic launch: Hopper on
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  } else if (kMode == kFlag && arrived_before != nullptr) {
    if (threadIdx.x == 0) {
      while (load_acquire(arrived_before) < ctas) {
      }
    }
    __syncthreads();
  }
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
  unsigned fold = 0;
  for (int j = 0; j < n; ++j) fold ^= early[j].x ^ early[j].w;
  for (int i = threadIdx.x + 8 * kThreads; i < weight_vectors; i += kThreads) {
    fold ^= load_streaming(w + i).x;
  }
  float sum = 0.f;
  for (int i = threadIdx.x; i < kVector; i += kThreads) sum += __ldcg(in + i);
  sum += static_cast<float>(fold & 1u) * 1e-30f;
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  __shared__ float warp_sums[kThreads / 32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  const int share = (kVector + gridDim.x - 1) / gridDim.x;
  const int i = blockIdx.x * share + threadIdx.x;
  if (threadIdx.x < share && i < kVector) out[i] = warp_sums[0] * 1e-9f + 1.f;
  if (kMode == kFlag) {
    __syncthreads();  // the CTA's writes before thread 0's release (cumulative)
    if (threadIdx.x == 0) add_release(arrived, 1);
  }
}

// Microseconds per kernel over graph replays of the chain.
template <Mode kMode>
float time_chain(int ctas, int weight_vectors, float* activations, uint4* weights,
                 unsigned* arrivals, cudaStream_t stream) {
  cudaGraph_t graph;
  BENCH_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  BENCH_CUDA(cudaMemsetAsync(arrivals, 0, sizeof(unsigned) * kKernels, stream));
  const size_t set = static_cast<size_t>(ctas) * weight_vectors;
  const size_t sets = set == 0 ? 1 : kWeightBytes / sizeof(uint4) / set;
  for (int k = 0; k < kKernels; ++k) {
    cudaLaunchAttribute attribute;
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(ctas);
    config.blockDim = dim3(kThreads);
    config.stream = stream;
    config.attrs = &attribute;
    config.numAttrs = k == 0 ? 0 : 1;  // the first follows the memset
    BENCH_CUDA(cudaLaunchKernelEx(&config, step_kernel<kMode>, activations + (k % 2) * kVector,
                                  activations + ((k + 1) % 2) * kVector, weights + (k % sets) * set,
                                  weight_vectors, k == 0 ? nullptr : arrivals + k - 1, arrivals + k,
                                  static_cast<unsigned>(ctas)));
  }
  BENCH_CUDA(cudaStreamEndCapture(stream, &graph));
  return graph_replay_ms(graph, stream, /*warmups=*/3, /*replays=*/20) * 1000.f / kKernels;
}

}  // namespace

int main() {
  cudaStream_t stream;
  BENCH_CUDA(cudaStreamCreate(&stream));
  int sms = 0;
  BENCH_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  float* activations;
  uint4* weights;
  unsigned* arrivals;
  BENCH_CUDA(cudaMalloc(&activations, sizeof(float) * 2 * kVector));
  BENCH_CUDA(cudaMemset(activations, 0, sizeof(float) * 2 * kVector));
  BENCH_CUDA(cudaMalloc(&weights, kWeightBytes));
  BENCH_CUDA(cudaMemset(weights, 1, kWeightBytes));
  BENCH_CUDA(cudaMalloc(&arrivals, sizeof(unsigned) * kKernels));
  std::printf("%d SMs; us per kernel in a graph of %d (two rounds)\n", sms, kKernels);
  std::printf("%6s %8s %8s %8s %8s\n", "CTAs", "KB/CTA", "wait", "flag", "none");
  for (const int ctas : {sms, 32}) {
    for (const int kb : {0, 16, 64, 128}) {
      const int vectors = kb * 1024 / static_cast<int>(sizeof(uint4));
      for (int round = 0; round < 2; ++round) {
        const float wait = time_chain<kWait>(ctas, vectors, activations, weights, arrivals, stream);
        const float flag = time_chain<kFlag>(ctas, vectors, activations, weights, arrivals, stream);
        const float none = time_chain<kNone>(ctas, vectors, activations, weights, arrivals, stream);
        std::printf("%6d %8d %8.3f %8.3f %8.3f\n", ctas, kb, wait, flag, none);
      }
    }
  }
  BENCH_CUDA(cudaFree(activations));
  BENCH_CUDA(cudaFree(weights));
  BENCH_CUDA(cudaFree(arrivals));
  return 0;
}
