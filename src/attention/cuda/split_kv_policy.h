// How flash decoding splits each request's KV across CTAs; shared by the host (grid, scratch
// size) and the device (each CTA's chunk, from seq_len), so a captured graph stays valid for
// any sequence lengths.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/host_device.h"
#include "kernels/cuda/gemv.h"

namespace sgl::attention::cuda {

inline constexpr int kMaxSplits = 128;  // splits per request

// Splits per request for a decode batch: as many (request, KV head, split) CTAs as fit in one
// wave of the `resident_ctas` the GPU runs at once (SMs x CTAs per SM), never more. Measured
// on H100 (Llama-3-8B heads): a second wave or more merge traffic costs more than shorter
// chunks save. Depends only on the batch size and fixed config, never on sequence lengths.
inline int decode_num_splits(int batch_size, int kv_heads, int resident_ctas) {
  const int64_t pairs = static_cast<int64_t>(batch_size) * kv_heads;
  return static_cast<int>(std::clamp<int64_t>(resident_ctas / pairs, 1, kMaxSplits));
}

// Non-empty splits, summed over a wide decode batch's requests, up to which the merge kernel
// launches the kernel after it (the attention output projection, `projection_rows` output
// rows; 0 if unknown) before its wait (flash_decode.cu), so that the projection's first weight
// loads overlap decode: 0 (never) when even one split per request is more. The batch then has
// at most this many non-empty CTAs (splits x KV heads):
// - sm_count / 8 in general: few enough that the projection's grid fits on the SMs they leave
//   free and still spreads over most of the GPU. (Beside the 24 to 40 CTAs of a Llama-3-8B
//   batch of 1, whose projection is 256 GEMV blocks at three an SM, the early projection
//   covered too few SMs and the step got slower; 1 x 128 has 8: docs/perf-log/
//   cuda-session-09.md and 2026-12-01-early-projection.md.)
// - where the projection's GEMV grid is at most one block (kGemvRowsPerBlock rows) an SM,
//   sm_count / 2 at batch 1 and sm_count / 4 above: its blocks spread one an SM beside decode's
//   (Qwen3-30B-A3B, hidden 2048: batch 1 with 12 to 64 CTAs and batch 2 with 24 and 32 got
//   faster, batch 2 with 40 and batch 3 with 36 to 60 slower:
//   docs/perf-log/2026-12-01-early-projection.md).
inline int decode_early_launch_splits(int sm_count, int batch_size, int kv_heads,
                                      int64_t projection_rows) {
  constexpr int64_t kRows = kernels::cuda::kGemvRowsPerBlock;
  const bool one_block_an_sm =
      projection_rows > 0 && (projection_rows + kRows - 1) / kRows <= sm_count;
  const int max_ctas = !one_block_an_sm  ? sm_count / 8
                       : batch_size == 1 ? sm_count / 2
                                         : sm_count / 4;
  return batch_size * kv_heads <= max_ctas ? max_ctas / kv_heads : 0;
}

// Partial-output rows (request, split, q head) the largest split batch can need: when
// splits > 1, batch * kv_heads * splits <= resident_ctas.
inline int64_t max_split_partial_rows(int q_heads, int kv_heads, int resident_ctas) {
  return static_cast<int64_t>(resident_ctas) * (q_heads / kv_heads);
}

// Tokens per split for a request of seq_len tokens: an even share, rounded up to a multiple of
// `align` (the kernel's split alignment, a multiple of its KV tile; at least one). Split s
// covers [s * chunk, min(seq_len, (s + 1) * chunk)); splits past seq_len are empty.
SGL_HOST_DEVICE inline int split_chunk_len(int seq_len, int num_splits, int align) {
  const int even = (seq_len + num_splits - 1) / num_splits;
  const int aligned = (even + align - 1) / align * align;
  return aligned > align ? aligned : align;
}

// Non-empty splits of a request (0 for an empty one).
SGL_HOST_DEVICE inline int split_count(int seq_len, int num_splits, int align) {
  const int chunk = split_chunk_len(seq_len, num_splits, align);
  return (seq_len + chunk - 1) / chunk;
}

}  // namespace sgl::attention::cuda
