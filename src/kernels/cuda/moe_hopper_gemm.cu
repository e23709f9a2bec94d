// fused_moe's Hopper path (sm_90): the Hopper GEMM's grouped mode (hopper_gemm.h: wgmma fed by
// TMA) over the alignment's tiles, each tile one expert's rows:
//   gather:   gathered[p] = x[token(p)], so TMA can stream whole tiles (padding rows are left
//             as they are: a GEMM output row depends on its own input row alone, and padding
//             rows' outputs are dropped);
//   gate/up:  act[p, j] = silu(gate_e[j] . gathered[p]) * (up_e[j] . gathered[p]);
//   down:     partial_bf16[entry(p), h] = down_e[h] . act[p] (padding rows dropped).
// Tiles past num_tokens_post_padded exit at once, so every launch shape is fixed.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "backend/cuda/native_stream.h"
#include "kernels/cuda/common/pdl.cuh"
#include "kernels/cuda/moe_kernels.h"
#include "kernels/cuda/stream_gemms.h"

namespace sgl::kernels::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxCtas = 2048;
constexpr int kVectorsInFlight = 8;  // 16-byte loads a lane issues before its stores

// A warp per sorted position p (grid-strided): gathered[p] = x[sorted[p] / k], nothing for
// padding. Each lane has kVectorsInFlight loads in flight: a thread per vector, each behind its
// own load of sorted[p], was slower (docs/perf-log/2026-11-30-moe-prefill-align.md).
__global__ void __launch_bounds__(kThreads)
    moe_gather_kernel(const __grid_constant__ MoeExpertsArgs a) {
  pdl_wait();
  pdl_launch_dependents();
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t vectors_per_row = a.hidden / 8, entries = a.rows * a.top_k;
  const int64_t used = a.counters[0], warps = static_cast<int64_t>(gridDim.x) * kWarps;
  const auto* x = static_cast<const uint4*>(a.x);
  auto* out = static_cast<uint4*>(a.gathered);
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; p < used;
       p += warps) {
    const int64_t entry = a.sorted[p];
    if (entry >= entries) continue;  // padding
    const uint4* src = x + (entry / a.top_k) * (a.x_stride / 8);
    uint4* dst = out + p * vectors_per_row;
    for (int64_t c0 = lane; c0 < vectors_per_row; c0 += 32 * kVectorsInFlight) {
      uint4 v[kVectorsInFlight];
#pragma unroll
      for (int j = 0; j < kVectorsInFlight; ++j) {
        const int64_t c = c0 + 32 * j;
        v[j] = c < vectors_per_row ? src[c] : uint4{};
      }
#pragma unroll
      for (int j = 0; j < kVectorsInFlight; ++j) {
        if (c0 + 32 * j < vectors_per_row) dst[c0 + 32 * j] = v[j];
      }
    }
  }
}

}  // namespace

void launch_moe_hopper_gemm(const MoeExpertsArgs& a, backend::Stream stream) {
  const auto ctas =
      static_cast<unsigned>(std::clamp<int64_t>((a.max_padded + kWarps - 1) / kWarps, 1, kMaxCtas));
  launch_pdl(moe_gather_kernel, dim3(ctas), dim3(kThreads), 0, backend::cuda::native_stream(stream),
             a);

  const Device device = stream.device;
  const Tensor gathered(a.gathered, DType::kBF16, {a.max_padded, a.hidden}, device);
  const Tensor w_gate_up(const_cast<void*>(a.w_gate_up), DType::kBF16,
                         {a.experts * 2 * a.inter, a.hidden}, device);
  const Tensor act(a.act, DType::kBF16, {a.max_padded, a.inter}, device);
  const Tensor w_down(const_cast<void*>(a.w_down), DType::kBF16, {a.experts * a.hidden, a.inter},
                      device);
  const Tensor partial(a.partial_bf16, DType::kBF16, {a.rows * a.top_k, a.hidden}, device);
  HopperGroups groups{.token_tile = static_cast<int>(a.block_size),
                      .tile_expert = a.expert_ids,
                      .rows_used = a.counters,
                      .expert_rows = 2 * a.inter,
                      .row_entry = a.sorted,
                      .entries = a.rows * a.top_k};
  HopperGemm& gemm = StreamGemms::of(stream).hopper;
  gemm.run_grouped_silu_and_mul(gathered, w_gate_up, groups, act, stream);
  groups.expert_rows = a.hidden;
  groups.scatter = true;
  gemm.run_grouped(act, w_down, groups, partial, stream);
}

bool moe_hopper_gemm_available(backend::Stream stream) {
  return StreamGemms::of(stream).hopper.available();
}

}  // namespace sgl::kernels::cuda
