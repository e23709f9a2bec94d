#include "kernels/cuda/hopper_gemm_plan.h"

#include <algorithm>
#include <iterator>

#include "core/check.h"

namespace sgl::kernels::cuda {
namespace {

// A CTA's fixed cost in k-blocks of streaming: pipeline fill, the output tile's pass through
// shared memory and the cluster reduction (each about a microsecond; a k-block is 0.5-0.7 us).
constexpr int64_t kOverheadBlocks = 4;
constexpr int kMinMulticastTokenTile = 128;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int hopper_token_tile(int64_t m) {
  for (int tile : kHopperTokenTiles) {
    if (m <= tile) return tile;
  }
  return std::end(kHopperTokenTiles)[-1];
}

HopperGemmPlan plan_hopper_gemm(int64_t m, int64_t feature_tiles, int64_t k_blocks,
                                const ResidentClusters& resident_clusters) {
  SGL_CHECK(m >= 1 && feature_tiles >= 1 && k_blocks >= 1) << "hopper gemm plan: empty problem";
  HopperGemmPlan plan;
  plan.token_tile = hopper_token_tile(m);
  plan.token_tiles = ceil_div(m, plan.token_tile);
  constexpr double kWeightBytes = 16 * 1024;  // per k-block
  const double token_bytes = plan.token_tile * 128.0;
  double best_cost = -1;
  for (int multicast = kHopperMaxMulticast; multicast >= 1; multicast /= 2) {
    // Multicast pays where token tiles are large (L2 traffic); each stage's release then also
    // costs a cluster round trip, which small, bandwidth-bound tiles cannot hide.
    if (multicast > 1 && plan.token_tile < kMinMulticastTokenTile) continue;
    if (feature_tiles % multicast != 0 || plan.token_tile / multicast < 8) continue;
    const double traffic = (kWeightBytes + token_bytes / multicast) / (kWeightBytes + token_bytes);
    for (int splits = 1; multicast * splits <= kHopperMaxClusterSize; ++splits) {
      if (splits > 1 && k_blocks < 2 * splits) break;
      const int64_t slots = resident_clusters(plan.token_tile, multicast, splits);
      if (slots < 1) continue;  // this cluster shape cannot be resident
      const int64_t clusters = feature_tiles / multicast * plan.token_tiles;
      const double cost =
          static_cast<double>(ceil_div(clusters, slots)) *
          (static_cast<double>(ceil_div(k_blocks, splits)) * traffic + kOverheadBlocks);
      if (best_cost < 0 || cost < best_cost - 1e-9) {
        best_cost = cost;
        plan.multicast = multicast;
        plan.splits = splits;
      }
    }
  }
  SGL_CHECK(best_cost >= 0) << "hopper gemm plan: no resident configuration";
  return plan;
}

}  // namespace sgl::kernels::cuda
