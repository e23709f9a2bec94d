// fused_moe's plain path, for f32 and for bf16 rows that 16-byte loads cannot take: one warp
// per output over the block-size-1 alignment (positions [0, num_tokens_post_padded) are all
// real entries), a grid-stride loop over the worst case so the launch shape is fixed.
//   gate/up:  act[p, j] = silu(gate_e[j] . x[token(p)]) * (up_e[j] . x[token(p)])
//   down:     partial[entry(p), h] = down_e[h] . act[p]
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "kernels/cuda/common/cuda_types.cuh"
#include "kernels/cuda/common/dispatch.cuh"
#include "kernels/cuda/common/pdl.cuh"
#include "kernels/cuda/moe_kernels.h"

namespace sgl::kernels::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

struct WarpLoop {
  int64_t first, step;
  int lane;
};
__device__ __forceinline__ WarpLoop warp_loop() {
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  return {thread / 32, static_cast<int64_t>(gridDim.x) * blockDim.x / 32,
          static_cast<int>(threadIdx.x % 32)};
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    simple_gate_up_kernel(const __grid_constant__ MoeExpertsArgs a) {
  pdl_wait();
  pdl_launch_dependents();
  const WarpLoop loop = warp_loop();
  const int64_t items = static_cast<int64_t>(a.counters[0]) * a.inter;
  for (int64_t item = loop.first; item < items; item += loop.step) {
    const int64_t p = item / a.inter, j = item % a.inter;
    const int64_t token = a.sorted[p] / a.top_k, expert = a.expert_ids[p];
    const T* x = static_cast<const T*>(a.x) + token * a.x_stride;
    const T* gate = static_cast<const T*>(a.w_gate_up) + (expert * 2 * a.inter + j) * a.hidden;
    const T* up = gate + a.inter * a.hidden;
    float g = 0.f, u = 0.f;
    for (int64_t c = loop.lane; c < a.hidden; c += 32) {
      const float xc = to_float(x[c]);
      g += to_float(gate[c]) * xc;
      u += to_float(up[c]) * xc;
    }
    g = warp_sum(g);
    u = warp_sum(u);
    if (loop.lane == 0) static_cast<T*>(a.act)[p * a.inter + j] = from_float<T>(silu_mul<T>(g, u));
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    simple_down_kernel(const __grid_constant__ MoeExpertsArgs a) {
  pdl_wait();
  pdl_launch_dependents();
  const WarpLoop loop = warp_loop();
  const int64_t items = static_cast<int64_t>(a.counters[0]) * a.hidden;
  for (int64_t item = loop.first; item < items; item += loop.step) {
    const int64_t p = item / a.hidden, h = item % a.hidden;
    const int64_t expert = a.expert_ids[p];
    const T* act = static_cast<const T*>(a.act) + p * a.inter;
    const T* w = static_cast<const T*>(a.w_down) + (expert * a.hidden + h) * a.inter;
    float d = 0.f;
    for (int64_t i = loop.lane; i < a.inter; i += 32) d += to_float(w[i]) * to_float(act[i]);
    d = warp_sum(d);
    if (loop.lane == 0) a.partial[static_cast<int64_t>(a.sorted[p]) * a.hidden + h] = d;
  }
}

// Enough warps for the worst case of `items` outputs, at most kMaxBlocks blocks.
unsigned blocks_for(int64_t items) {
  const int64_t warps_per_block = kThreads / 32;
  return static_cast<unsigned>(
      std::clamp<int64_t>((items + warps_per_block - 1) / warps_per_block, 1, kMaxBlocks));
}

}  // namespace

void launch_moe_simple(const MoeExpertsArgs& a, DType dtype, backend::Stream stream) {
  const auto s = backend::cuda::native_stream(stream);
  SGL_DISPATCH_FLOAT(dtype, T, {
    launch_pdl(simple_gate_up_kernel<T>, dim3(blocks_for(a.max_padded * a.inter)), kThreads, 0, s,
               a);
    launch_pdl(simple_down_kernel<T>, dim3(blocks_for(a.max_padded * a.hidden)), kThreads, 0, s, a);
  });
}

}  // namespace sgl::kernels::cuda
