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

// The largest token tile it runs. Tiles of 256 (prefill) keep the one-CTA-per-tile kernel:
// persistent, they were 2-3% slower with three stages beside a whole staging tile and 50%
// slower with four and a staging tile of half the tokens, written out in two passes; decode
// batches of 64-256 (tiles of 16-32) got 6-7% faster
// (docs/perf-log/2026-11-30-moe-kernel-costs.md). Without the spills those measurements had,
// 256-token tiles ran persistent 1.5% faster at 8 x 1024 but 1.5-5% slower at 8 x 512 and
// 2 x 1024 than on the one-CTA kernel, whose MMAs stop at a tile's last real row
// (docs/perf-log/2026-12-01-padding-rows.md).
inline constexpr int kHopperGroupedMaxTokenTile = 128;

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
