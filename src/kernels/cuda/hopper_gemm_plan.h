// How the Hopper GEMM (hopper_gemm.h) cuts one problem into CTAs: the token tile (the wgmma N
// dimension), how many CTAs of a cluster share (multicast) one token tile, and how many split
// k. Host-only arithmetic, tested on the CPU.
#pragma once

#include <cstdint>
#include <functional>
#include <type_traits>

namespace sgl::kernels::cuda {

inline constexpr int kHopperMaxClusterSize = 8;  // portable
inline constexpr int kHopperMaxSplits = kHopperMaxClusterSize;
inline constexpr int kHopperMaxMulticast = 4;

// Token tiles (wgmma N) the kernel is built for, ascending.
inline constexpr int kHopperTokenTiles[] = {16, 32, 64, 128, 256};

// f(std::integral_constant<int, T>{}) for the token tile T == token_tile (one of
// kHopperTokenTiles; any other value takes the largest): the kernels' instance per tile.
template <typename F>
decltype(auto) with_hopper_token_tile(int token_tile, F&& f) {
  switch (token_tile) {
    case 16:
      return f(std::integral_constant<int, 16>{});
    case 32:
      return f(std::integral_constant<int, 32>{});
    case 64:
      return f(std::integral_constant<int, 64>{});
    case 128:
      return f(std::integral_constant<int, 128>{});
    default:
      return f(std::integral_constant<int, 256>{});
  }
}

// The smallest token tile that holds m; the largest beyond it.
int hopper_token_tile(int64_t m);

struct HopperGemmPlan {
  int token_tile = 0;       // tokens per CTA (wgmma N)
  int64_t token_tiles = 0;  // ceil(m / token_tile)
  int multicast = 1;        // cluster x: CTAs of adjacent feature tiles sharing one token tile
  int splits = 1;           // cluster z: CTAs each summing a contiguous share of k
};

// What a cluster of `multicast` x `splits` CTAs can do at once: how many are resident.
using ResidentClusters = std::function<int(int token_tile, int multicast, int splits)>;

// Picks the cluster shape for `feature_tiles` x token tiles output tiles of `k_blocks` k-blocks
// each (a k-block moves 16 KB of weight and token_tile x 128 bytes of tokens into a CTA),
// minimizing waves x (k-blocks per split x the bytes a CTA loads per k-block, relative to no
// multicast, + a fixed per-CTA overhead); ties go to more multicast, then fewer splits. Every
// split keeps at least two k-blocks; multicast is only used for token tiles of 128 or more,
// divides the feature tiles and leaves each CTA at least 8 token rows to load.
HopperGemmPlan plan_hopper_gemm(int64_t m, int64_t feature_tiles, int64_t k_blocks,
                                const ResidentClusters& resident_clusters);

}  // namespace sgl::kernels::cuda
