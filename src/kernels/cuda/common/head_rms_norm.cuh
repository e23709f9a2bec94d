// qk_rms_norm's per-head RMSNorm (Qwen3's q_norm / k_norm) for kernels that hold a head as
// rotate-half pairs spread over a group of threads (RoPE + KV store, the decode kernel), so
// they can normalize the head themselves with the bits qk_rms_norm would have written.
//
// qk_rms_norm's packed rows (D = 32 E, E = 2 or 4) give lane l the elements [l E, l E + E),
// squared and summed in order from 0, then warp_sum_of adds the lanes l ^ 16, ^ 8, ^ 4, ^ 2
// and ^ 1 in that order. Here the j-th thread of a group of D / (2 kVec) consecutive lanes
// holds elements [j kVec, j kVec + kVec) (lo) and their partners D / 2 further (hi): the sums
// of qk_rms_norm's lanes [j L, j L + L), L = kVec / E, and of those lanes + 16. So the first
// level (l ^ 16) is within the thread, the next ones are shuffles across the group while they
// cross threads, and the last ones are within the thread again.
#pragma once

#include <cuda_bf16.h>

#include "kernels/cuda/common/cuda_types.cuh"

namespace sgl::kernels::cuda {

template <int kDim, int kVec>
struct HeadRmsNorm {
  static constexpr int kPerLane = kDim / 32;        // qk_rms_norm's E
  static constexpr int kLanes = kVec / kPerLane;    // its lanes per half held by one thread
  static constexpr int kGroup = kDim / (2 * kVec);  // threads per head
  static_assert(kDim == 64 || kDim == 128, "qk_rms_norm's packed rows of 2 or 4 per lane");
  static_assert(kVec % kPerLane == 0 && kLanes <= 4 && kGroup <= 16);

  // lo, hi: f32 of one head's bf16 values as above; replaced by weight * bf16(x / rms), rounded
  // to bf16 (as f32), which qk_rms_norm writes. j: this thread's place in its group; lane: its
  // lane in the warp. Every thread of the group calls it together.
  __device__ static void apply(float (&lo)[kVec], float (&hi)[kVec], const __nv_bfloat16* weight,
                               int j, int lane, float eps) {
    float part[kLanes];
#pragma unroll
    for (int m = 0; m < kLanes; ++m) {
      float a = 0.f, b = 0.f;
#pragma unroll
      for (int e = 0; e < kPerLane; ++e) {
        const int i = m * kPerLane + e;
        a = __fmaf_rn(lo[i], lo[i], a);
        b = __fmaf_rn(hi[i], hi[i], b);
      }
      part[m] = a + b;  // lanes l and l + 16
    }
    const unsigned mask = ((1u << kGroup) - 1) << (lane / kGroup * kGroup);
#pragma unroll
    for (int x = 8 / kLanes; x >= 1; x /= 2) {  // lane bits 3 .. log2(kLanes): across threads
#pragma unroll
      for (int m = 0; m < kLanes; ++m) part[m] += __shfl_xor_sync(mask, part[m], x);
    }
    float sum = part[0];  // the lane bits below log2(kLanes), highest first
    if constexpr (kLanes == 2) sum = part[0] + part[1];
    if constexpr (kLanes == 4) sum = (part[0] + part[2]) + (part[1] + part[3]);
    const float inv = rsqrtf(sum / static_cast<float>(kDim) + eps);
    auto normed = [&](float x, int d) {
      return to_float(from_float<__nv_bfloat16>(to_float(weight[d]) *
                                                to_float(from_float<__nv_bfloat16>(x * inv))));
    };
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      lo[i] = normed(lo[i], j * kVec + i);
      hi[i] = normed(hi[i], kDim / 2 + j * kVec + i);
    }
  }
};

}  // namespace sgl::kernels::cuda
