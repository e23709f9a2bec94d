// How the CUDA fused_moe cuts a call into token chunks and picks the kernels of each chunk, and
// where each piece of its scratch lives in the workspace. Host-only arithmetic, tested on the CPU.
#pragma once

#include <cstdint>

namespace sgl::kernels::cuda {

// (token, slot) pairs up to which a chunk takes the decode path, and the GEMV path (without the
// Hopper GEMM; with it, below).
inline constexpr int64_t kMoeDecodeMaxPairs = 64;
inline constexpr int64_t kMoeGemvMaxPairs = 1024;
// With the Hopper GEMM the GEMVs end at 16 pairs: its persistent kernel for small token tiles
// beat both from 32 pairs on and lost below, on Qwen3-30B-A3B and Mixtral-8x7B, masked (expert
// parallelism) or not (docs/perf-log/2026-11-30-moe-decode-paths.md).
inline constexpr int64_t kMoeHopperDecodeMaxPairs = 16;
// Rows of one grouped-GEMM block: the alignment's block size on the kGrouped path.
inline constexpr int64_t kMoeGemmBlockRows = 64;
// The largest token tile the Hopper path takes (the tile is also the alignment's block size):
// 256 over 128 halves the weight loads and CTA epilogues per token of a prefill
// (docs/perf-log/2026-11-29-moe-prefill.md).
inline constexpr int64_t kMoeHopperMaxTile = 256;
// A chunk's gathered, act and partial buffers stay near this size (a long prefill runs in
// chunks) unless that would leave fewer than kMoeMinChunkTokens tokens per chunk. Larger chunks
// give each expert more rows, so less of its last tile is padding, and each chunk streams every
// expert's weights once (8192 tokens over 4096 measured faster:
// docs/perf-log/2026-11-29-moe-prefill.md).
inline constexpr int64_t kMoeChunkBudgetBytes = int64_t{1024} << 20;
inline constexpr int64_t kMoeMinChunkTokens = 256;
inline constexpr int64_t kMoeMaxChunkTokens = 8192;

enum class MoePath : uint8_t {
  kDecode,   // bf16, few pairs: the expert GEMV streams each selected expert once, no alignment
  kGemv,     // bf16, a batch's pairs: the expert GEMV over the alignment's groups
  kHopper,   // bf16 on sm_90: the Hopper GEMM's grouped mode over the rows gathered per expert
  kGrouped,  // bf16 elsewhere: grouped GEMM (mma.sync) over blocks of kMoeGemmBlockRows rows
  kSimple,   // f32, or bf16 rows that 16-byte loads cannot take: one warp per output
};

struct MoeShape {
  int64_t tokens = 0, top_k = 0, experts = 0, hidden = 0, inter = 0;
};

// Tokens per chunk: all of them, or as many as the budget allows.
int64_t moe_chunk_tokens(const MoeShape& s);

// The path of a chunk of `rows` tokens. vector_ok: bf16, H, I and x's row stride multiples of 8
// and 16-byte aligned bases (what 16-byte loads need); hopper: the Hopper GEMM runs here.
MoePath moe_path(bool vector_ok, bool hopper, int64_t rows, int64_t top_k);

// The Hopper path's token tile (= the alignment's block size) for `entries` (token, slot) pairs
// over `experts`: the smallest that holds twice an expert's average share, up to
// kMoeHopperMaxTile, so that at decode sizes each expert's weights stream once (batch 256 of
// Qwen3-30B-A3B, share 16, ran fastest with tiles of 32 among 16 / 32 / 64:
// docs/perf-log/2026-11-28-moe-hopper-grouped.md) and at prefill sizes the padding of each
// expert's last tile stays a small part.
int64_t moe_hopper_token_tile(int64_t entries, int64_t experts);

// CTAs the alignment of `entries` pairs over `experts` spreads over (moe_align.cu), 1 for the
// one-CTA kernel: about kMoeAlignEntriesPerCta a CTA past kMoeAlignOneCtaEntries entries (one
// CTA walking a long prefill's entries twice was slow:
// docs/perf-log/2026-11-30-moe-prefill-align.md), at most kMoeAlignMaxCtas, each CTA scanning at
// most kMoeAlignMaxScannedCounts per-CTA counts, and up to kMoeAlignMaxSplitExperts experts (two
// i32 each in its shared memory).
inline constexpr int64_t kMoeAlignOneCtaEntries = 4096;
inline constexpr int64_t kMoeAlignEntriesPerCta = 2048;
inline constexpr int64_t kMoeAlignMaxCtas = 64;
inline constexpr int64_t kMoeAlignMaxScannedCounts = 16384;
inline constexpr int64_t kMoeAlignMaxSplitExperts = 4096;
int64_t moe_align_ctas(int64_t entries, int64_t experts);

// Byte offsets into the workspace of one chunk's pieces (each 256-byte aligned; max_padded is
// whole blocks, max_blocks x block_size):
//   sorted      i32 [max_padded]   the alignment's sorted_token_ids
//   expert_ids  i32 [max_blocks]
//   offsets     i32 [E + 1]        expert_offsets
//   counters    i32 [2]            num_tokens_post_padded, then the number of active experts
//   active      i32 [min(E, entries)]  the experts with tokens, ascending (GEMV path)
//   gathered    bf16 [max_padded, H]  x's row of each sorted position (kHopper; else empty)
//   act         [max_padded, I]    silu(gate) * up per sorted position (bf16, f32 on kSimple);
//                                  per entry on the GEMV paths (max_padded == entries there)
//   partial     f32 [entries, H]   each (token, slot)'s down projection, unweighted; bf16 on
//                                  the Hopper path (partial_bf16), which halves the bytes its
//                                  store and the sum move (measured faster at prefill; SGLang's
//                                  fused_moe rounds there too)
//   tile_counters i32 [ceil(H / 16)]  the GEMV paths' finished CTAs per row tile of down
//   align_counts  i32 [CTAs x E]   each alignment CTA's counts (moe_align_ctas > 1; else empty)
struct MoeWorkspaceLayout {
  int64_t block_size = 0, entries = 0, max_padded = 0, max_blocks = 0, tile_counter_count = 0;
  int64_t sorted = 0, expert_ids = 0, offsets = 0, counters = 0, active = 0, gathered = 0, act = 0;
  int64_t partial = 0;
  bool partial_bf16 = false;
  int64_t tile_counters = 0;
  int64_t align_ctas = 1;  // moe_align_ctas for this chunk (1 on the decode path: no alignment)
  int64_t align_counts = 0;
  int64_t bytes = 0;
};
MoeWorkspaceLayout moe_workspace_layout(MoePath path, const MoeShape& s, int64_t rows,
                                        int64_t act_bytes);

// Enough for every chunk of a call on any path (the dtype is not known here).
int64_t moe_workspace_bytes(const MoeShape& s);

}  // namespace sgl::kernels::cuda
