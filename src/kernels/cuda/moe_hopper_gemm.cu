// fused_moe's Hopper path (sm_90): the Hopper GEMM's grouped mode (hopper_gemm.h: wgmma fed by
// TMA) over the alignment's tiles, each tile one expert's rows:
//   gather:   gathered[p] = x[token(p)] (zero for padding), so TMA can stream whole tiles;
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
constexpr int kMaxCtas = 2048;

// One 16-byte vector per thread per step over the used rows: gathered[p] = x[sorted[p] / k].
__global__ void __launch_bounds__(kThreads)
    moe_gather_kernel(const __grid_constant__ MoeExpertsArgs a) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t vectors_per_row = a.hidden / 8, entries = a.rows * a.top_k;
  const int64_t vectors = static_cast<int64_t>(a.counters[0]) * vectors_per_row;
  const auto* x = static_cast<const uint4*>(a.x);
  auto* out = static_cast<uint4*>(a.gathered);
  for (int64_t v = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < vectors;
       v += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t position = v / vectors_per_row, column = v % vectors_per_row;
    const int64_t entry = a.sorted[position];
    out[v] = entry < entries ? x[(entry / a.top_k) * (a.x_stride / 8) + column] : uint4{};
  }
}

}  // namespace

void launch_moe_hopper_gemm(const MoeExpertsArgs& a, backend::Stream stream) {
  const int64_t vectors = a.max_padded * a.hidden / 8;
  const auto ctas =
      static_cast<unsigned>(std::clamp<int64_t>((vectors + kThreads - 1) / kThreads, 1, kMaxCtas));
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
                      .expert_rows = 2 * a.inter};
  HopperGemm& gemm = StreamGemms::of(stream).hopper;
  gemm.run_grouped_silu_and_mul(gathered, w_gate_up, groups, act, stream);
  groups.expert_rows = a.hidden;
  groups.out_row = a.sorted;
  groups.out_rows = a.rows * a.top_k;
  gemm.run_grouped(act, w_down, groups, partial, stream);
}

bool moe_hopper_gemm_available(backend::Stream stream) {
  return StreamGemms::of(stream).hopper.available();
}

}  // namespace sgl::kernels::cuda
