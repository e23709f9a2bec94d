// The Hopper GEMM's persistent grouped kernel (MoE expert GEMMs at prefill and large decode
// batches), used by HopperGemm::run_grouped and run_grouped_silu_and_mul (hopper_gemm.h) for
// bf16 outputs. One CTA per SM walks the (feature tile, token tile) grid: its producer thread
// streams the next tile's k-blocks through the ring while the consumers write the last tile
// out through a staging tile of their own, so neither a CTA's launch nor its pipeline fill
// nor most of its epilogue stands between two tiles' main loops.
#pragma once

#include <cuda.h>

#include "backend/stream.h"
#include "kernels/cuda/hopper_gemm.h"

namespace sgl::kernels::cuda {

// The largest token tile it runs (256: three stages beside a whole staging tile).
inline constexpr int kHopperGroupedMaxTokenTile = 256;

// Whether a grouped problem's tiles of `token_tile` tokens over `k_blocks` k-blocks of 64 take
// this kernel rather than HopperGemm's one CTA per tile: tiles up to 128 tokens (decode batches
// and short prefills), and tiles of 256 whose main loop is short (k up to 1024: Qwen3-30B-A3B's
// down projection), where the launches, pipeline fills and epilogues it overlaps weigh most.
// Longer ones (gate/up projections) stream faster through the one-CTA kernel's fourth stage,
// whose MMAs also stop at a tile's last real row; this kernel multiplies whole tiles (stopping
// early made it slower). Measurements: docs/perf-log/2026-11-30-moe-kernel-costs.md,
// docs/perf-log/2026-12-01-persistent-prefill.md.
inline bool hopper_grouped_runs_persistent(int token_tile, int64_t k_blocks) {
  return token_tile <= 128 || k_blocks <= 16;
}

struct HopperGroupedLaunch {
  bool silu_mul = false;  // out = silu(x gate^T) * (x up^T), else y = x w^T
  int token_tile = 0;     // one of kHopperTokenTiles, <= kHopperGroupedMaxTokenTile
  int m = 0;              // x rows: a multiple of token_tile
  int n = 0;              // output columns (silu_mul: I)
  int k_blocks = 0;       // ceil(k / 64)
  int feature_tiles = 0;  // output columns / 128 (silu_mul: I / 64), rounded up
  HopperGroups groups;
  void* y = nullptr;  // bf16 [m, or groups.entries with groups.scatter, n]
};

// Kernel attributes (shared memory) on the current device; once, before the first launch.
void configure_hopper_grouped_kernels();

// Queues the kernel on `stream`, a CTA per SM (or fewer, one per tile). w_map: the stacked
// weights as bf16_rows_sw128 boxes of 64 rows; x_map: x in boxes of token_tile rows.
void launch_hopper_grouped(const CUtensorMap& w_map, const CUtensorMap& x_map,
                           const HopperGroupedLaunch& l, backend::Stream stream);

}  // namespace sgl::kernels::cuda
