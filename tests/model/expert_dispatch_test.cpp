// Expert parallelism's exchange (expert_parallel_moe) over the shared-memory communicator: each
// rank's token slice, run through experts that only their groups' ranks hold, equals the
// reference fused MoE over every expert, for whole experts per rank (ep = ranks), experts split
// between the ranks of a group (ep < ranks), routing that sends every pair to one group (the
// chunks' worst-case capacity), and batches smaller than the ranks (empty slices).
#include "model/layers/expert_dispatch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/allocator.h"
#include "core/buffer.h"
#include "kernels/moe.h"
#include "tp_ranks.h"

namespace sgl::model {
namespace {

constexpr int64_t kExperts = 8, kHidden = 16, kInter = 8, kTopK = 2;

struct Routing {
  std::vector<int32_t> ids;  // [n, k]
  std::vector<float> weights;
};

std::vector<float> random_values(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

// Distinct experts per token: random, or all from experts {0, 1} (group 0 at every ep).
Routing route(int64_t n, bool one_group, uint32_t seed) {
  std::mt19937 rng(seed);
  Routing r;
  for (int64_t t = 0; t < n; ++t) {
    const auto first = static_cast<int32_t>(one_group ? 0 : rng() % kExperts);
    const auto second =
        static_cast<int32_t>(one_group ? 1 : (first + 1 + rng() % (kExperts - 1)) % kExperts);
    r.ids.insert(r.ids.end(), {first, second});
    const float w = static_cast<float>(rng() % 1000) / 1000.f;
    r.weights.insert(r.weights.end(), {w, 1.f - w});
  }
  return r;
}

Tensor host(std::vector<float>& v, std::initializer_list<int64_t> shape) {
  return Tensor(v.data(), DType::kF32, shape);
}

// The rank's experts and rows of the full [E, 2I, H] / [E, H, I] weights.
void local_weights(const std::vector<float>& gate_up, const std::vector<float>& down,
                   const ExpertParallel& ep, std::vector<float>& local_gate_up,
                   std::vector<float>& local_down) {
  const int64_t experts = kExperts / ep.ep_size, inter = kInter / ep.moe_tp.size;
  const int64_t first = ep.ep_rank * experts, row0 = ep.moe_tp.rank * inter;
  local_gate_up.clear();
  local_down.clear();
  for (int64_t e = first; e < first + experts; ++e) {
    for (int64_t half = 0; half < 2; ++half) {  // gate rows, then up rows
      for (int64_t i = row0; i < row0 + inter; ++i) {
        const float* row = gate_up.data() + ((e * 2 + half) * kInter + i) * kHidden;
        local_gate_up.insert(local_gate_up.end(), row, row + kHidden);
      }
    }
    for (int64_t h = 0; h < kHidden; ++h) {
      const float* row = down.data() + (e * kHidden + h) * kInter + row0;
      local_down.insert(local_down.end(), row, row + inter);
    }
  }
}

struct Case {
  int ranks;
  int ep_size;
  int64_t tokens;
  bool one_group;
};

class ExpertDispatch : public ::testing::TestWithParam<Case> {};

TEST_P(ExpertDispatch, EveryRankSliceEqualsTheReference) {
  const Case& c = GetParam();
  std::vector<float> x = random_values(c.tokens * kHidden, 1);
  std::vector<float> gate_up = random_values(kExperts * 2 * kInter * kHidden, 2);
  std::vector<float> down = random_values(kExperts * kHidden * kInter, 3);
  Routing r = route(c.tokens, c.one_group, 4);
  std::vector<float> ref(x.size());
  kernels::fused_moe_reference(
      host(x, {c.tokens, kHidden}), host(gate_up, {kExperts, 2 * kInter, kHidden}),
      host(down, {kExperts, kHidden, kInter}), host(r.weights, {c.tokens, kTopK}),
      Tensor(r.ids.data(), DType::kI32, {c.tokens, kTopK}), host(ref, {c.tokens, kHidden}));

  // Planned for more tokens than the batch, as a model plans for its largest.
  const int64_t max_tokens = c.tokens + 5;
  std::vector<std::vector<float>> outs(static_cast<size_t>(c.ranks));
  std::vector<TokenSlice> slices(static_cast<size_t>(c.ranks));
  test::run_ranks(c.ranks, [&](int rank, distributed::Communicator& comm) {
    const ExpertParallel ep = expert_parallel({rank, c.ranks}, c.ep_size);
    const ExpertDispatchShape shape{.hidden_size = kHidden,
                                    .top_k = kTopK,
                                    .local_experts = kExperts / c.ep_size,
                                    .local_intermediate_size = kInter / ep.moe_tp.size,
                                    .ep = ep,
                                    .ranks = c.ranks};
    CpuAllocator allocator;
    ExpertDispatchScratch scratch;
    ActivationPlan plan;
    plan_expert_dispatch(shape, max_tokens, DType::kF32, Device::cpu(), scratch, plan);
    plan.allocate(allocator);
    std::vector<float> w13, w2;
    local_weights(gate_up, down, ep, w13, w2);
    const TokenSlice slice = token_slice(c.tokens, rank, c.ranks);
    std::vector<float>& out = outs[static_cast<size_t>(rank)];
    out.assign(static_cast<size_t>(slice.size * kHidden), 0.f);
    slices[static_cast<size_t>(rank)] = slice;
    expert_parallel_moe(
        host(x, {c.tokens, kHidden}), host(r.weights, {c.tokens, kTopK}),
        Tensor(r.ids.data(), DType::kI32, {c.tokens, kTopK}),
        host(w13, {shape.local_experts, 2 * shape.local_intermediate_size, kHidden}),
        host(w2, {shape.local_experts, kHidden, shape.local_intermediate_size}), shape, scratch,
        host(out, {slice.size, kHidden}), comm, backend::Stream::cpu());
  });
  int64_t covered = 0;
  for (int rank = 0; rank < c.ranks; ++rank) {
    const TokenSlice& slice = slices[static_cast<size_t>(rank)];
    EXPECT_EQ(slice.start, covered) << "rank " << rank;
    covered += slice.size;
    for (int64_t i = 0; i < slice.size * kHidden; ++i) {
      ASSERT_NEAR(outs[static_cast<size_t>(rank)][i], ref[slice.start * kHidden + i], 1e-5)
          << "rank " << rank << " token " << slice.start + i / kHidden;
    }
  }
  EXPECT_EQ(covered, c.tokens);
}

INSTANTIATE_TEST_SUITE_P(Plans, ExpertDispatch,
                         ::testing::Values(Case{4, 4, 10, false}, Case{4, 2, 10, false},
                                           Case{2, 2, 7, false}, Case{4, 4, 9, true},
                                           Case{4, 2, 9, true}, Case{4, 4, 3, false},
                                           Case{2, 1, 5, false}, Case{4, 2, 1, true}),
                         [](const auto& info) {
                           const Case& c = info.param;
                           return "r" + std::to_string(c.ranks) + "_ep" +
                                  std::to_string(c.ep_size) + "_n" + std::to_string(c.tokens) +
                                  (c.one_group ? "_one_group" : "");
                         });

TEST(ExpertDispatchTest, TokenSlices) {
  const TokenSlice a = token_slice(10, 3, 4);  // 3 per rank: the last has 1
  EXPECT_EQ(a.start, 9);
  EXPECT_EQ(a.size, 1);
  EXPECT_EQ(a.per_rank, 3);
  const TokenSlice b = token_slice(2, 3, 4);  // fewer tokens than ranks: empty
  EXPECT_EQ(b.start, 2);
  EXPECT_EQ(b.size, 0);
  EXPECT_EQ(b.per_rank, 1);
}

}  // namespace
}  // namespace sgl::model
