// CPU MoE ops: routing against hand-computed cases, alignment invariants, and the grouped-GEMM
// experts path against the per-token reference loop.
#include "kernels/moe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace sgl::kernels {
namespace {

const backend::Stream kCpu = backend::Stream::cpu();

Tensor f32(std::vector<float>& v, std::initializer_list<int64_t> shape) {
  return Tensor(v.data(), DType::kF32, shape);
}
Tensor i32(std::vector<int32_t>& v, std::initializer_list<int64_t> shape) {
  return Tensor(v.data(), DType::kI32, shape);
}

std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

struct Routed {
  std::vector<float> weights;
  std::vector<int32_t> ids;
};

Routed route(std::vector<float> logits, int64_t tokens, int64_t experts, int64_t k,
             MoeScoring scoring, bool renormalize) {
  Routed r{std::vector<float>(tokens * k, NAN), std::vector<int32_t>(tokens * k, -7)};
  moe_route(f32(logits, {tokens, experts}), scoring, renormalize, f32(r.weights, {tokens, k}),
            i32(r.ids, {tokens, k}), kCpu);
  return r;
}

double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

// Mixtral (softmax, renormalised), Qwen2-MoE (softmax, norm_topk_prob false) and a sigmoid
// router, on logits whose top-k is not in index order.
TEST(MoeRoute, ScoringAndRenormalisationModes) {
  const std::vector<float> logits = {1, 3, 2, 0};
  const double z = std::exp(1.0) + std::exp(3.0) + std::exp(2.0) + 1;

  Routed mixtral = route(logits, 1, 4, 2, MoeScoring::kSoftmax, true);
  EXPECT_EQ(mixtral.ids, (std::vector<int32_t>{1, 2}));
  EXPECT_NEAR(mixtral.weights[0], 1 / (1 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(mixtral.weights[1], std::exp(-1.0) / (1 + std::exp(-1.0)), 1e-6);

  Routed qwen2 = route(logits, 1, 4, 2, MoeScoring::kSoftmax, false);
  EXPECT_EQ(qwen2.ids, (std::vector<int32_t>{1, 2}));
  EXPECT_NEAR(qwen2.weights[0], std::exp(3.0) / z, 1e-6);
  EXPECT_NEAR(qwen2.weights[1], std::exp(2.0) / z, 1e-6);

  Routed sig = route({0, 2, -1}, 1, 3, 2, MoeScoring::kSigmoid, false);
  EXPECT_EQ(sig.ids, (std::vector<int32_t>{1, 0}));
  EXPECT_NEAR(sig.weights[0], sigmoid(2), 1e-6);
  EXPECT_NEAR(sig.weights[1], 0.5, 1e-6);
  Routed sig_norm = route({0, 2, -1}, 1, 3, 2, MoeScoring::kSigmoid, true);
  EXPECT_NEAR(sig_norm.weights[0], sigmoid(2) / (sigmoid(2) + 0.5), 1e-6);
  EXPECT_NEAR(sig_norm.weights[1], 0.5 / (sigmoid(2) + 0.5), 1e-6);
}

// Equal scores go to the lower expert index, in every position of the top-k.
TEST(MoeRoute, TiesPickTheLowerExpert) {
  Routed r =
      route({0, 5, 5, 5, /**/ 2, 2, 2, 2, /**/ 7, 1, 7, 1}, 3, 4, 3, MoeScoring::kSoftmax, false);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{1, 2, 3, /**/ 0, 1, 2, /**/ 0, 2, 1}));
  for (int j = 3; j < 6; ++j) EXPECT_FLOAT_EQ(r.weights[j], 0.25f);
  Routed norm = route({2, 2, 2, 2}, 1, 4, 3, MoeScoring::kSoftmax, true);
  for (float w : norm.weights) EXPECT_FLOAT_EQ(w, 1.f / 3);
}

// Many rows with coarse (often tied) logits and a strided view: the ids are the first k of a
// stable descending sort of the scores, and the weights are those scores.
TEST(MoeRoute, MatchesStableSortOfScores) {
  const int64_t tokens = 50, experts = 60, k = 8, ld = 64;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> level(-3, 3);
  std::vector<float> logits(tokens * ld);
  for (auto& v : logits) v = 0.5f * level(rng);
  std::vector<float> w(tokens * k);
  std::vector<int32_t> ids(tokens * k);
  moe_route(f32(logits, {tokens, ld}).slice_last(0, experts), MoeScoring::kSoftmax, false,
            f32(w, {tokens, k}), i32(ids, {tokens, k}), kCpu);
  for (int64_t t = 0; t < tokens; ++t) {
    const float* row = logits.data() + t * ld;
    double z = 0;
    for (int64_t e = 0; e < experts; ++e) z += std::exp(double(row[e]));
    std::vector<int32_t> order(experts);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return row[a] > row[b]; });
    for (int64_t j = 0; j < k; ++j) {
      ASSERT_EQ(ids[t * k + j], order[j]) << "token " << t << " slot " << j;
      EXPECT_NEAR(w[t * k + j], std::exp(double(row[order[j]])) / z, 1e-6);
    }
  }
}

TEST(MoeRoute, RejectsMoreSlotsThanExperts) {
  std::vector<float> logits(4), w(5);
  std::vector<int32_t> ids(5);
  EXPECT_DEATH(moe_route(f32(logits, {1, 4}), MoeScoring::kSoftmax, true, f32(w, {1, 5}),
                         i32(ids, {1, 5}), kCpu),
               "top_k 5 > 4 experts");
}

struct Aligned {
  std::vector<int32_t> sorted, expert_ids, offsets, total;
};

// Runs moe_align_block_size into outputs pre-filled with junk and checks every documented
// invariant; returns the outputs.
Aligned align_and_check(std::vector<int32_t> ids, int64_t tokens, int64_t k, int64_t experts,
                        int64_t block) {
  const MoeAlignSizes sizes = moe_align_sizes(tokens, k, experts, block);
  Aligned a{std::vector<int32_t>(sizes.max_padded, 12345),
            std::vector<int32_t>(sizes.max_blocks, 12345), std::vector<int32_t>(experts + 1, 12345),
            std::vector<int32_t>(1, 12345)};
  const MoeAlignment out{.sorted_token_ids = i32(a.sorted, {sizes.max_padded}),
                         .expert_ids = i32(a.expert_ids, {sizes.max_blocks}),
                         .expert_offsets = i32(a.offsets, {experts + 1}),
                         .num_tokens_post_padded = i32(a.total, {1})};
  moe_align_block_size(i32(ids, {tokens, k}), experts, block, out, kCpu);

  const int32_t entries = static_cast<int32_t>(tokens * k), total = a.total[0];
  EXPECT_EQ(total, a.offsets[experts]);
  EXPECT_EQ(total % block, 0);
  EXPECT_LE(total, sizes.max_padded);
  EXPECT_EQ(a.offsets[0], 0);
  std::vector<int> seen(entries, 0);
  for (int64_t e = 0; e < experts; ++e) {
    const int64_t count = std::count(ids.begin(), ids.end(), e);
    const int32_t begin = a.offsets[e], end = a.offsets[e + 1];
    EXPECT_EQ(end - begin, (count + block - 1) / block * block) << "expert " << e;
    for (int32_t i = begin; i < end; ++i) {
      if (i - begin < count) {
        EXPECT_GE(a.sorted[i], 0);
        EXPECT_LT(a.sorted[i], entries);
        if (a.sorted[i] < 0 || a.sorted[i] >= entries) continue;
        EXPECT_EQ(ids[a.sorted[i]], e) << "entry " << i;
        ++seen[a.sorted[i]];
      } else {
        EXPECT_EQ(a.sorted[i], entries) << "padding " << i << " of expert " << e;
      }
    }
    for (int32_t b = begin / block; b < end / block; ++b) EXPECT_EQ(a.expert_ids[b], e);
  }
  for (int32_t i = 0; i < entries; ++i) {
    EXPECT_EQ(seen[i], ids[i] >= 0 ? 1 : 0) << "flat index " << i;  // masked (-1): in no group
  }
  for (int64_t i = total; i < sizes.max_padded; ++i) EXPECT_EQ(a.sorted[i], entries);
  for (int64_t b = total / block; b < sizes.max_blocks; ++b) EXPECT_EQ(a.expert_ids[b], -1);
  return a;
}

TEST(MoeAlignBlockSize, HandWorkedExample) {
  // Flat entries 0..5 go to experts 2 0 | 2 3 | 0 2; expert 1 gets none.
  Aligned a = align_and_check({2, 0, 2, 3, 0, 2}, 3, 2, 4, 4);
  EXPECT_EQ(moe_align_sizes(3, 2, 4, 4).max_padded, 6 + 4 * 3);
  EXPECT_EQ(a.total[0], 12);
  EXPECT_EQ(a.offsets, (std::vector<int32_t>{0, 4, 4, 8, 12}));
  const std::vector<int32_t> used(a.sorted.begin(), a.sorted.begin() + 12);
  EXPECT_EQ(used, (std::vector<int32_t>{1, 4, 6, 6, /**/ 0, 2, 5, 6, /**/ 3, 6, 6, 6}));
  EXPECT_EQ(a.expert_ids, (std::vector<int32_t>{0, 2, 3, -1, -1}));
}

TEST(MoeAlignBlockSize, InvariantsOnRandomAndSkewedRouting) {
  std::mt19937 rng(5);
  for (const auto [tokens, k, experts, block] :
       {std::array<int64_t, 4>{300, 8, 60, 16}, {64, 2, 8, 64}, {7, 4, 128, 16}, {33, 1, 5, 1}}) {
    std::uniform_int_distribution<int> pick(0, static_cast<int>(experts) - 1);
    std::vector<int32_t> ids(tokens * k);
    for (auto& id : ids) id = pick(rng);
    SCOPED_TRACE(::testing::Message()
                 << tokens << "x" << k << " over " << experts << " block " << block);
    align_and_check(ids, tokens, k, experts, block);
  }
  // Every entry on one expert (repeats within a token included): one group, all others empty.
  Aligned one = align_and_check(std::vector<int32_t>(5 * 2, 3), 5, 2, 8, 4);
  EXPECT_EQ(one.offsets, (std::vector<int32_t>{0, 0, 0, 0, 12, 12, 12, 12, 12}));
  // A decode step over many experts: the worst-case size pads only experts that can get tokens.
  EXPECT_EQ(moe_align_sizes(1, 8, 128, 64).max_padded, 8 + 8 * 63);
  align_and_check({127, 0, 64, 5, 6, 7, 8, 9}, 1, 8, 128, 64);
  // No tokens: everything is padding.
  Aligned none = align_and_check({}, 0, 2, 4, 8);
  EXPECT_EQ(none.total[0], 0);
}

// Masked pairs (id -1: expert parallelism's other ranks' experts) join no group.
TEST(MoeAlignBlockSize, MaskedPairsJoinNoGroup) {
  Aligned a = align_and_check({2, -1, -1, 3, 0, -1}, 3, 2, 4, 2);
  EXPECT_EQ(a.offsets, (std::vector<int32_t>{0, 2, 2, 4, 6}));
  const std::vector<int32_t> used(a.sorted.begin(), a.sorted.begin() + 6);
  EXPECT_EQ(used, (std::vector<int32_t>{4, 6, /**/ 0, 6, /**/ 3, 6}));
  Aligned none = align_and_check(std::vector<int32_t>(8, -1), 4, 2, 4, 2);
  EXPECT_EQ(none.total[0], 0);
}

TEST(MoeAlignBlockSize, RejectsOutOfRangeExpert) {
  std::vector<int32_t> ids = {0, 4}, sorted(2 + 2 * 3), blocks(2), offsets(5), total(1);
  const MoeAlignment out{i32(sorted, {8}), i32(blocks, {2}), i32(offsets, {5}), i32(total, {1})};
  EXPECT_DEATH(moe_align_block_size(i32(ids, {1, 2}), 4, 4, out, kCpu), "expert id 4");
  ids = {0, -2};
  EXPECT_DEATH(moe_align_block_size(i32(ids, {1, 2}), 4, 4, out, kCpu), "expert id -2");
}

// Expert parallelism at one rank: its experts renumbered from 0, every other id -1.
TEST(MoeLocalIds, RenumbersTheRanksExpertsAndMasksTheRest) {
  std::vector<int32_t> ids = {0, 5, 4, 7, 3, 6}, local(6, 99);
  moe_local_ids(i32(ids, {3, 2}), 4, 2, i32(local, {3, 2}), kCpu);
  EXPECT_EQ(local, (std::vector<int32_t>{-1, 1, 0, -1, -1, -1}));
  moe_local_ids(i32(ids, {3, 2}), 0, 8, i32(local, {3, 2}), kCpu);
  EXPECT_EQ(local, ids);
}

// One MoE layer's weights and inputs, scaled so activations stay O(1).
struct MoeCase {
  int64_t tokens, hidden, inter, experts, k;
  std::vector<float> x, w13, w2, out, ref;
  Routed routed;

  MoeCase(int64_t t, int64_t h, int64_t i, int64_t e, int64_t top_k, uint32_t seed)
      : tokens(t), hidden(h), inter(i), experts(e), k(top_k) {
    x = random_vec(t * h, seed);
    w13 = random_vec(e * 2 * i * h, seed + 1, 1.f / std::sqrt(float(h)));
    w2 = random_vec(e * h * i, seed + 2, 1.f / std::sqrt(float(i)));
    routed = route(random_vec(t * e, seed + 3), t, e, top_k, MoeScoring::kSoftmax, true);
    out.assign(t * h, NAN);
    ref.assign(t * h, NAN);
  }

  void run() {
    const int64_t bytes =
        fused_moe_workspace_bytes(Device::cpu(), tokens, k, experts, hidden, inter);
    std::vector<float> workspace((bytes + 3) / 4, NAN);
    const Tensor ws(workspace.data(), DType::kF32, {static_cast<int64_t>(workspace.size())});
    fused_moe(xt(), w13t(), w2t(), f32(routed.weights, {tokens, k}), i32(routed.ids, {tokens, k}),
              ws, f32(out, {tokens, hidden}), kCpu);
    fused_moe_reference(xt(), w13t(), w2t(), f32(routed.weights, {tokens, k}),
                        i32(routed.ids, {tokens, k}), f32(ref, {tokens, hidden}));
  }

  // Largest |out - ref| in units of 1 + |ref|.
  double max_error() const {
    double worst = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      const double err = std::abs(double(out[i]) - ref[i]) / (1 + std::abs(double(ref[i])));
      worst = std::isnan(err) ? INFINITY : std::max(worst, err);
    }
    return worst;
  }

  Tensor xt() { return f32(x, {tokens, hidden}); }
  Tensor w13t() { return f32(w13, {experts, 2 * inter, hidden}); }
  Tensor w2t() { return f32(w2, {experts, hidden, inter}); }
};

// The grouped-GEMM path equals the per-token loop over expert counts, top-k and token counts
// (sizes not multiples of 64; decode's 1 token through prefill's 300, past the 256-row chunk).
TEST(FusedMoe, MatchesReferenceOverSweep) {
  for (int64_t experts : {8, 60, 128}) {
    for (int64_t k : {1, 2, 4, 8}) {
      for (int64_t tokens : {1, 7, 64, 300}) {
        MoeCase c(tokens, 72, 40, experts, k,
                  static_cast<uint32_t>(experts * 131 + k * 7 + tokens));
        c.run();
        ASSERT_LT(c.max_error(), 1e-5)
            << experts << " experts, top-" << k << ", " << tokens << " tokens";
      }
    }
  }
}

// Every token on one expert, twice per token with different weights: one group of 600 rows, run
// in chunks. And a row-strided x.
TEST(FusedMoe, SkewedRepeatedExpertsAndStridedInput) {
  MoeCase c(300, 72, 40, 8, 2, 17);
  std::fill(c.routed.ids.begin(), c.routed.ids.end(), 5);
  c.run();
  EXPECT_LT(c.max_error(), 1e-5);

  const int64_t t = 9, h = 24, ld = 40;
  MoeCase s(t, h, 16, 4, 2, 23);
  std::vector<float> wide(t * ld, 1e30f);
  for (int64_t r = 0; r < t; ++r) std::copy_n(s.x.data() + r * h, h, wide.data() + r * ld);
  const Tensor x = f32(wide, {t, ld}).slice_last(0, h);
  std::vector<float> ws(fused_moe_workspace_bytes(Device::cpu(), t, 2, 4, h, 16) / 4 + 1);
  fused_moe(x, s.w13t(), s.w2t(), f32(s.routed.weights, {t, 2}), i32(s.routed.ids, {t, 2}),
            f32(ws, {static_cast<int64_t>(ws.size())}), f32(s.out, {t, h}), kCpu);
  fused_moe_reference(s.xt(), s.w13t(), s.w2t(), f32(s.routed.weights, {t, 2}),
                      i32(s.routed.ids, {t, 2}), f32(s.ref, {t, h}));
  EXPECT_LT(s.max_error(), 1e-5);
}

// Masked pairs (id -1) add nothing: the same as the pair's weight set to 0 (the reference's own
// loop over valid ids, checked against that), at any share of masked pairs; a token whose pairs
// are all masked, and a batch with none left, get zeros.
TEST(FusedMoe, MaskedPairsAddNothing) {
  std::mt19937 rng(41);
  for (const double share : {0.0, 0.5, 1.0}) {
    for (int64_t tokens : {1, 7, 64}) {
      MoeCase c(tokens, 72, 40, 16, 4, static_cast<uint32_t>(tokens * 3 + share * 10));
      MoeCase zeroed = c;  // the masked pairs' weights 0 instead (ids kept)
      for (size_t n = 0; n < c.routed.ids.size(); ++n) {
        if (std::uniform_real_distribution<double>(0, 1)(rng) < share || n / 4 % 5 == 0) {
          c.routed.ids[n] = -1;
          zeroed.routed.weights[n] = 0.f;
        }
      }
      c.run();
      zeroed.run();
      ASSERT_LT(c.max_error(), 1e-5) << share << " masked, " << tokens << " tokens";
      for (size_t i = 0; i < c.ref.size(); ++i) {
        ASSERT_NEAR(c.ref[i], zeroed.ref[i], 1e-6) << "reference element " << i;
      }
      if (share == 1.0) {
        EXPECT_EQ(c.out, std::vector<float>(c.out.size(), 0.f)) << tokens << " tokens";
      }
    }
  }
}

// out may be x itself: the layer's hidden rows become its output (every expert reads the
// original rows first).
TEST(FusedMoe, InPlaceEqualsSeparateOutput) {
  MoeCase c(37, 72, 40, 16, 4, 31);
  c.run();
  ASSERT_LT(c.max_error(), 1e-5);
  std::vector<float> ws(fused_moe_workspace_bytes(Device::cpu(), 37, 4, 16, 72, 40) / 4 + 1, NAN);
  std::vector<float> x = c.x;
  fused_moe(f32(x, {37, 72}), c.w13t(), c.w2t(), f32(c.routed.weights, {37, 4}),
            i32(c.routed.ids, {37, 4}), f32(ws, {static_cast<int64_t>(ws.size())}),
            f32(x, {37, 72}), kCpu);
  EXPECT_EQ(x, c.out);
}

TEST(FusedMoe, RejectsSmallWorkspaceAndOverlappingOutput) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // BLAS threads may be running
  MoeCase c(4, 8, 4, 2, 1, 29);
  std::vector<float> ws(4);
  EXPECT_DEATH(fused_moe(c.xt(), c.w13t(), c.w2t(), f32(c.routed.weights, {4, 1}),
                         i32(c.routed.ids, {4, 1}), f32(ws, {4}), f32(c.out, {4, 8}), kCpu),
               "workspace must be");
  std::vector<float> big(fused_moe_workspace_bytes(Device::cpu(), 4, 1, 2, 8, 4) / 4);
  std::vector<float> rows(5 * 8, 0.f);  // x = rows 0-3, out = rows 1-4: overlapping, not x
  EXPECT_DEATH(fused_moe(f32(rows, {4, 8}), c.w13t(), c.w2t(), f32(c.routed.weights, {4, 1}),
                         i32(c.routed.ids, {4, 1}), f32(big, {static_cast<int64_t>(big.size())}),
                         Tensor(rows.data() + 8, DType::kF32, {4, 8}), kCpu),
               "x and out overlap");
}

TEST(AddSigmoidGated, AddsGatedSharedExpert) {
  const int64_t t = 3, h = 5;
  auto x = random_vec(t * h, 31), w = random_vec(h, 32), y = random_vec(t * h, 33);
  auto out = random_vec(t * h, 34);
  const auto before = out;
  add_sigmoid_gated(f32(x, {t, h}), f32(w, {1, h}), f32(y, {t, h}), f32(out, {t, h}), kCpu);
  for (int64_t r = 0; r < t; ++r) {
    double logit = 0;
    for (int64_t c = 0; c < h; ++c) logit += double(x[r * h + c]) * w[c];
    for (int64_t c = 0; c < h; ++c) {
      EXPECT_NEAR(out[r * h + c], before[r * h + c] + sigmoid(logit) * y[r * h + c], 1e-6);
    }
  }
}

}  // namespace
}  // namespace sgl::kernels
