// HopperGemm: our linear layer for decode-sized batches on Hopper (sm_90a), y[m, n] =
// x[m, k] w[n, k]^T in bf16 with f32 accumulation, for 16 < m <= a few hundred tokens, where
// every weight byte is read once per step and the library's short GEMMs lose their ramp and
// tail. The weight is the wgmma A operand (64 rows per consumer warpgroup, 128 per CTA), the
// tokens its N dimension; TMA streams both through a shared-memory ring that one producer warp
// fills while two consumer warpgroups multiply. CTAs of adjacent weight tiles form a cluster
// whose members each load a slice of the shared token tile and multicast it to all, cutting
// the L2 traffic that re-reading tokens costs at 128-256 tokens. Shapes with few output tiles
// also split k across the cluster's CTAs and sum the partials through distributed shared
// memory, so there is no workspace and no second kernel; the output tile leaves through shared
// memory in 16-byte rows. The fused gate/up + SiLU variant puts 64 gate rows and the 64 matching up
// rows in one CTA and writes silu(gate) * up. Programmatic launch: the first stages' weight
// loads are issued before waiting on the previous kernel.
//
// Grouped (MoE) problems run over token tiles that each belong to one expert: a tile's weights
// are its expert's rows of the stacked weight, and tiles past the rows in use (a device value
// the alignment wrote) are skipped, so the launch shape is fixed and a CUDA graph can capture
// it. Their weight loads wait for the alignment (the expert is data). With bf16 outputs, tiles of
// up to 128 tokens, and of 256 over k up to 1024, take the persistent kernel of
// hopper_grouped_gemm.h (one CTA per SM walks the tiles: hopper_grouped_runs_persistent); the
// others, and f32 outputs, this kernel, one CTA per tile.
//
// Ownership: one per stream (StreamGemms, stream_gemms.h), holding the device's facts
// (compute capability, cluster residency per tile shape) and the tensor-map encoder.
// Thread-safe. CUDA graphs: run() queues one kernel launch with the tensor maps as by-value
// parameters.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "backend/stream.h"
#include "core/tensor.h"
#include "kernels/cuda/tensor_map.h"

namespace sgl::kernels::cuda {

// With --linear-backend hopper, linear() sends token counts in (kGemvMaxTokens,
// kHopperGemmMaxTokens] here; longer prefills stay with cuBLASLt.
inline constexpr int64_t kHopperGemmMaxTokens = 256;

// How a grouped problem's x rows map to experts and y rows (device pointers).
struct HopperGroups {
  int token_tile = 0;                    // x rows per tile: one of kHopperTokenTiles
  const int32_t* tile_expert = nullptr;  // [x rows / token_tile]: each tile's expert
  const int32_t* rows_used = nullptr;    // [1]: x rows in use (a multiple of token_tile)
  int64_t expert_rows = 0;               // rows of w per expert (run_grouped_silu_and_mul: 2I)
  // Optional: the (token, k) entry each x row holds, `entries` or more for padding. A tile's
  // padding rows follow its real ones, so the one-CTA-per-tile kernel's MMAs stop at the last
  // real row (rounded up to 64 on tiles of 128 and 256 tokens; smaller tiles are multiplied
  // whole); nullptr: every row of a tile is multiplied. (The persistent kernel multiplies whole
  // tiles: stopping early measured slower there, hopper_grouped_runs_persistent.)
  const int32_t* row_entry = nullptr;
  int64_t entries = 0;
  // run_grouped with row_entry: x row r's y row is row_entry[r] (y: [entries, n]; padding rows
  // are dropped); else the same row.
  bool scatter = false;
};

class HopperGemm {
 public:
  explicit HopperGemm(int device_index);

  // Whether this GPU runs the kernel (compute capability 9.0, and this build's image for it
  // sm_90a: hopper_features.h).
  bool available() const { return available_; }

  // Whether run() takes this problem: available, bf16 x and w, x rows 16-byte aligned with
  // k % 8 == 0, w contiguous, n % 8 == 0, y contiguous bf16 or f32, bias bf16 or undefined.
  bool applies(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y) const;
  // The same for run_silu_and_mul: w = [gate; up]: [2I, k], out: [m, I] bf16 with I % 8 == 0.
  bool applies_silu_and_mul(const Tensor& x, const Tensor& w, const Tensor& out) const;

  // y = x w^T (+ bias), queued on `stream`.
  void run(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
           backend::Stream stream);
  // out = silu(x gate^T) * (x up^T), rounded as the unfused ops round (each projection and
  // silu to bf16).
  void run_silu_and_mul(const Tensor& x, const Tensor& w, const Tensor& out,
                        backend::Stream stream);

  // Grouped: x [rows, k] contiguous bf16, rows a multiple of g.token_tile; w [E * expert_rows, k]
  // the experts' weights stacked. Whether the kernels take them (as applies, plus the tile).
  bool applies_grouped(const Tensor& x, const Tensor& w, const HopperGroups& g,
                       const Tensor& y) const;
  // y[r] (scatter: y[row_entry[r]]) = x[r] w_e^T for each x row r of a tile of expert e; y:
  // [x rows (scatter: entries), n] f32 or bf16 contiguous, n = expert_rows.
  void run_grouped(const Tensor& x, const Tensor& w, const HopperGroups& g, const Tensor& y,
                   backend::Stream stream);
  // out[r] = silu(x[r] gate_e^T) * (x[r] up_e^T), w_e = [gate_e; up_e] ([2I, k] per expert);
  // out: [rows, I] bf16 contiguous (every x row is written, padding rows too: with row_entry,
  // those past the MMAs' last row as silu(0) * 0, the others from whatever x holds there).
  void run_grouped_silu_and_mul(const Tensor& x, const Tensor& w, const HopperGroups& g,
                                const Tensor& out, backend::Stream stream);

 private:
  struct Launch;
  void launch(const Launch& l, backend::Stream stream);
  // Kernel attributes and the tensor-map encoder, made on the first launch (not at
  // construction: a stream that never runs this GEMM pays nothing); mu_ held by the caller.
  void prepare();
  // Clusters of this shape resident at once; cached, mu_ held by the caller.
  int resident_clusters(int token_tile, int multicast, int splits);

  int device_index_ = 0;
  bool available_ = false;
  std::unique_ptr<TensorMapEncoder> encoder_;  // set by prepare()
  std::mutex mu_;
  std::map<std::tuple<int, int, int>, int> resident_;  // (tile, multicast, splits); mu_
};

}  // namespace sgl::kernels::cuda
