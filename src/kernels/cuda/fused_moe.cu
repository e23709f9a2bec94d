// CUDA fused_moe: per chunk of tokens, the alignment, the experts' two projections on the
// chunk's path (moe_plan.h: the expert GEMVs, the grouped GEMM or the plain kernels), then the
// weighted sum over each token's k slots (the GEMVs sum themselves; the decode GEMV aligns
// itself too). out may be x itself: every path reads a chunk's x rows before it writes its out
// rows. Every launch shape follows from the tensor shapes and every kernel reads the
// data-dependent sizes on the device, so a CUDA graph can capture it.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "core/alignment.h"
#include "core/check.h"
#include "kernels/cuda/common/cuda_types.cuh"
#include "kernels/cuda/common/dispatch.cuh"
#include "kernels/cuda/common/pdl.cuh"
#include "kernels/cuda/cuda_moe.h"
#include "kernels/cuda/moe_kernels.h"
#include "kernels/cuda/moe_plan.h"

namespace sgl::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// out[t, :] = sum_j weights[t, j] * partial[t * top_k + j, :], in f32 with j ascending, so the
// result does not depend on which CTA finished first; kVec outputs per thread. With kMasked the
// masked pairs (ids -1) are skipped: they have no partial row. (Without masked pairs the ids are
// not read: a load and a branch before each slot's row would serialize the row loads.)
template <typename PartialT, typename OutT, int kVec, bool kMasked>
__global__ void __launch_bounds__(kThreads)
    moe_reduce_kernel(const PartialT* __restrict__ partial, const float* __restrict__ weights,
                      const int32_t* __restrict__ ids, int64_t rows, int top_k, int64_t hidden,
                      OutT* __restrict__ out) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t vectors = hidden / kVec;
  for (int64_t t = blockIdx.y; t < rows; t += gridDim.y) {
    for (int64_t v = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < vectors;
         v += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      float sum[kVec] = {};
      for (int j = 0; j < top_k; ++j) {
        if (kMasked && ids[t * top_k + j] < 0) continue;
        const float w = weights[t * top_k + j];
        const PartialT* src = partial + (t * top_k + j) * hidden + v * kVec;
        float value[kVec];
        if constexpr (kVec == 4 && std::is_same_v<PartialT, float>) {
          const float4 q = *reinterpret_cast<const float4*>(src);
          value[0] = q.x, value[1] = q.y, value[2] = q.z, value[3] = q.w;
        } else if constexpr (kVec == 4) {
          const uint2 q = *reinterpret_cast<const uint2*>(src);
          const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&q.x));
          const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&q.y));
          value[0] = lo.x, value[1] = lo.y, value[2] = hi.x, value[3] = hi.y;
        } else {
          value[0] = to_float(src[0]);
        }
#pragma unroll
        for (int i = 0; i < kVec; ++i) sum[i] += w * value[i];
      }
#pragma unroll
      for (int i = 0; i < kVec; ++i) out[t * hidden + v * kVec + i] = from_float<OutT>(sum[i]);
    }
  }
}

// out: [rows, hidden] contiguous of `dtype`; partial f32, or bf16 where partial_bf16. `ids`:
// nullptr, or the routing whose masked pairs (-1) the sum skips.
void launch_reduce(const void* partial, bool partial_bf16, const float* weights, const int32_t* ids,
                   int64_t rows, int64_t top_k, int64_t hidden, void* out, DType dtype,
                   backend::Stream stream) {
  const auto s = backend::cuda::native_stream(stream);
  const bool vec = hidden % 4 == 0;  // rows of 8 or 16 bytes (partial's base is 256-byte aligned)
  const int64_t vectors = vec ? hidden / 4 : hidden;
  const dim3 grid(static_cast<unsigned>((vectors + kThreads - 1) / kThreads),
                  static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
  const int k = static_cast<int>(top_k);
  auto run = [&]<typename P>(const P* p) {
    SGL_DISPATCH_FLOAT(dtype, T, {
      auto kernel =
          vec ? (ids ? moe_reduce_kernel<P, T, 4, true> : moe_reduce_kernel<P, T, 4, false>)
              : (ids ? moe_reduce_kernel<P, T, 1, true> : moe_reduce_kernel<P, T, 1, false>);
      launch_pdl(kernel, grid, kThreads, 0, s, p, weights, ids, rows, k, hidden,
                 static_cast<T*>(out));
    });
  };
  if (partial_bf16) {
    run(static_cast<const __nv_bfloat16*>(partial));
  } else {
    run(static_cast<const float*>(partial));
  }
}

template <typename T>
T* at(const Tensor& workspace, int64_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(workspace.raw()) + offset);
}

}  // namespace

void fused_moe(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
               const Tensor& topk_weights, const Tensor& topk_ids, const Tensor& workspace,
               const Tensor& out, backend::Stream stream, bool allow_hopper, bool masked_pairs) {
  const MoeShape shape{x.size(0), topk_ids.size(1), w_gate_up.size(0), x.size(1),
                       w_gate_up.size(1) / 2};
  const DType dtype = x.dtype();
  const int64_t elem = static_cast<int64_t>(dtype_size(dtype));
  const bool vector_ok = dtype == DType::kBF16 && shape.hidden % 8 == 0 && shape.inter % 8 == 0 &&
                         x.stride(0) % 8 == 0 && is_aligned(x.raw(), 16) &&
                         is_aligned(w_gate_up.raw(), 16) && is_aligned(w_down.raw(), 16);
  const bool hopper = allow_hopper && moe_hopper_gemm_available(stream);
  const int64_t chunk = moe_chunk_tokens(shape);
  for (int64_t first = 0; first < shape.tokens; first += chunk) {
    const int64_t rows = std::min(chunk, shape.tokens - first);
    const MoePath path = moe_path(vector_ok, hopper, rows, shape.top_k);
    const MoeWorkspaceLayout layout = moe_workspace_layout(path, shape, rows, elem);
    SGL_CHECK(layout.bytes <= static_cast<int64_t>(workspace.nbytes()))
        << "fused_moe: chunk of " << rows << " tokens needs " << layout.bytes
        << " workspace bytes, got " << workspace.nbytes();
    const MoeAlignOut align{
        .sorted = at<int32_t>(workspace, layout.sorted),
        .sorted_size = layout.max_padded,
        .expert_ids = at<int32_t>(workspace, layout.expert_ids),
        .expert_ids_size = layout.max_blocks,
        .offsets = at<int32_t>(workspace, layout.offsets),
        .counters = at<int32_t>(workspace, layout.counters),
        .active = path == MoePath::kGemv ? at<int32_t>(workspace, layout.active) : nullptr,
        .cta_counts = layout.align_ctas > 1 ? at<int32_t>(workspace, layout.align_counts) : nullptr,
    };
    const int32_t* ids = topk_ids.data<int32_t>() + first * shape.top_k;
    const float* weights = topk_weights.data<float>() + first * shape.top_k;
    void* chunk_out = static_cast<char*>(out.raw()) + first * shape.hidden * elem;
    if (path != MoePath::kDecode) {
      launch_moe_align(ids, layout.entries, shape.experts, layout.block_size, align, stream);
    }
    const MoeExpertsArgs args{
        .x = static_cast<const char*>(x.raw()) + first * x.stride(0) * elem,
        .x_stride = x.stride(0),
        .w_gate_up = w_gate_up.raw(),
        .w_down = w_down.raw(),
        .rows = rows,
        .top_k = shape.top_k,
        .experts = shape.experts,
        .hidden = shape.hidden,
        .inter = shape.inter,
        .topk_ids = ids,
        .topk_weights = weights,
        .sorted = align.sorted,
        .expert_ids = align.expert_ids,
        .offsets = align.offsets,
        .counters = align.counters,
        .active = align.active,
        .block_size = layout.block_size,
        .max_padded = layout.max_padded,
        .max_blocks = layout.max_blocks,
        .gathered = at<void>(workspace, layout.gathered),
        .act = at<void>(workspace, layout.act),
        .partial = layout.partial_bf16 ? nullptr : at<float>(workspace, layout.partial),
        .partial_bf16 = layout.partial_bf16 ? at<void>(workspace, layout.partial) : nullptr,
        .tile_counters = at<int32_t>(workspace, layout.tile_counters),
        .tile_counter_count = layout.tile_counter_count,
        .out = chunk_out,
    };
    switch (path) {
      case MoePath::kDecode:
      case MoePath::kGemv:
        // Sums into out itself (masked: its own instances, which skip -1).
        launch_moe_expert_gemv(args, path == MoePath::kGemv, masked_pairs, stream);
        continue;
      case MoePath::kHopper:
        launch_moe_hopper_gemm(args, stream);
        break;
      case MoePath::kGrouped:
        launch_moe_grouped_gemm(args, stream);
        break;
      case MoePath::kSimple:
        launch_moe_simple(args, dtype, stream);
        break;
    }
    launch_reduce(layout.partial_bf16 ? args.partial_bf16 : args.partial, layout.partial_bf16,
                  weights, masked_pairs ? ids : nullptr, rows, shape.top_k, shape.hidden, chunk_out,
                  dtype, stream);
  }
}

}  // namespace sgl::kernels::cuda
