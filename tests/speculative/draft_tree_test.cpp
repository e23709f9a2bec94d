// EAGLE-2 draft trees: top-k log-probs against a brute-force log-softmax, the frontier and the
// chosen nodes against sorting every candidate, ties (a child's score equal to its parent's), the
// parent always chosen, the tree mask against walking each node's ancestors, and the accepted
// path of a chain, a star and a branching tree.
#include "speculative/draft_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "speculative/draft_acceptance.h"

namespace sgl::speculative {
namespace {

TEST(DraftTree, TopKIsTheLogSoftmaxsBest) {
  const std::vector<float> logits = {0.5f, 2.f, -1.f, 2.f, 1.f};
  double sum = 0;
  for (float x : logits) sum += std::exp(x);
  const std::vector<TokenLogprob> top = top_k_logprobs(logits, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].token, 1);  // ties: the lower id first
  EXPECT_EQ(top[1].token, 3);
  EXPECT_EQ(top[2].token, 4);
  for (const TokenLogprob& t : top) {
    EXPECT_NEAR(t.logprob, logits[static_cast<size_t>(t.token)] - std::log(sum), 1e-6);
    EXPECT_LE(t.logprob, 0.f);
  }
}

TEST(DraftTree, PeakedDistributionsTieParentAndChild) {
  // One token takes all the mass: its log-prob is 0, so the child scores what its parent does.
  const std::vector<float> peaked = {0.f, 200.f, -50.f};
  const std::vector<TokenLogprob> top = top_k_logprobs(peaked, 2);
  EXPECT_EQ(top[0].logprob, 0.f);
  DraftTreeBuilder b(2);
  b.add_children(-1, top);  // candidates 0 (token 1, score 0) and 1 (token 0)
  EXPECT_EQ(b.take_frontier(), (std::vector<int32_t>{0, 1}));
  b.add_children(0, top);  // candidate 2 (token 1, score 0): ties its parent
  b.add_children(1, top);
  EXPECT_EQ(b.candidate(2).score, b.candidate(0).score);
  // The parent wins the tie: one node is the root's child, two its own child too.
  DraftTree one = b.select(1);
  EXPECT_EQ(one.parents, (std::vector<int32_t>{0}));
  EXPECT_EQ(one.tokens, (std::vector<int32_t>{1}));
  DraftTree two = b.select(2);
  EXPECT_EQ(two.parents, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(two.depths, (std::vector<int32_t>{1, 2}));
}

TEST(DraftTree, HandBuiltTree) {
  DraftTreeBuilder b(2);
  b.add_children(-1, std::vector<TokenLogprob>{{10, -0.1f}, {11, -2.f}});  // 0, 1
  EXPECT_EQ(b.take_frontier(), (std::vector<int32_t>{0, 1}));
  b.add_children(0, std::vector<TokenLogprob>{{20, -0.2f}, {21, -3.f}});  // 2 (-0.3), 3 (-3.1)
  b.add_children(1, std::vector<TokenLogprob>{{22, -0.5f}, {23, -1.f}});  // 4 (-2.5), 5 (-3.0)
  EXPECT_EQ(b.take_frontier(), (std::vector<int32_t>{2, 4}));
  b.add_children(2, std::vector<TokenLogprob>{{30, -0.1f}, {31, -4.f}});  // 6 (-0.4), 7
  b.add_children(4, std::vector<TokenLogprob>{{32, -0.1f}, {33, -4.f}});  // 8 (-2.6), 9
  // Best four: 0 (-0.1), 2 (-0.3), 6 (-0.4), 1 (-2.0); by depth: 0, 1 | 2 | 6.
  const DraftTree t = b.select(4);
  EXPECT_EQ(t.tokens, (std::vector<int32_t>{10, 11, 20, 30}));
  EXPECT_EQ(t.parents, (std::vector<int32_t>{0, 0, 1, 3}));
  EXPECT_EQ(t.depths, (std::vector<int32_t>{1, 1, 2, 3}));
  const std::vector<uint64_t> mask = tree_mask(t.parents);
  EXPECT_EQ(mask, (std::vector<uint64_t>{0b1, 0b11, 0b101, 0b1011, 0b11011}));
}

// Random draft distributions: what the builder chooses equals sorting every candidate.
TEST(DraftTree, RandomTreesMatchBruteForce) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int32_t k = 1 + static_cast<int32_t>(rng() % 4);
    const int32_t steps = 1 + static_cast<int32_t>(rng() % 4);
    const int32_t vocab = k + static_cast<int32_t>(rng() % 6);
    // Few distinct logit values, so ties happen.
    auto distribution = [&] {
      std::vector<float> logits(static_cast<size_t>(vocab));
      for (float& x : logits) x = static_cast<float>(rng() % 3) * (trial % 5 == 0 ? 60.f : 0.7f);
      return top_k_logprobs(logits, k);
    };
    DraftTreeBuilder b(k);
    b.add_children(-1, distribution());
    for (int32_t s = 1; s < steps; ++s) {
      const std::vector<int32_t> frontier = b.take_frontier();
      ASSERT_EQ(static_cast<int32_t>(frontier.size()), k);
      for (int32_t f : frontier) b.add_children(f, distribution());
    }
    const int32_t n = 1 + static_cast<int32_t>(rng() % std::min(b.size(), 63));
    const DraftTree t = b.select(n);
    // Brute force: all candidates by (score desc, depth, index), the first n.
    std::vector<int32_t> all(static_cast<size_t>(b.size()));
    std::iota(all.begin(), all.end(), 0);
    std::stable_sort(all.begin(), all.end(), [&](int32_t x, int32_t y) {
      const auto &cx = b.candidate(x), &cy = b.candidate(y);
      return cx.score != cy.score ? cx.score > cy.score : cx.depth < cy.depth;
    });
    std::vector<int32_t> want(all.begin(), all.begin() + n), got_depths;
    std::vector<int32_t> chosen_tokens;
    for (int32_t c : want) chosen_tokens.push_back(b.candidate(c).token);
    std::vector<int32_t> tree_tokens = t.tokens;
    std::sort(chosen_tokens.begin(), chosen_tokens.end());
    std::sort(tree_tokens.begin(), tree_tokens.end());
    EXPECT_EQ(tree_tokens, chosen_tokens);
    ASSERT_EQ(static_cast<int32_t>(t.parents.size()), n);
    for (int32_t i = 0; i < n; ++i) {
      const int32_t p = t.parents[static_cast<size_t>(i)];
      ASSERT_GE(p, 0);
      ASSERT_LE(p, i) << "a parent precedes its child";
      EXPECT_EQ(t.depths[static_cast<size_t>(i)],
                p == 0 ? 1 : t.depths[static_cast<size_t>(p - 1)] + 1);
      if (i > 0) EXPECT_LE(t.depths[static_cast<size_t>(i - 1)], t.depths[static_cast<size_t>(i)]);
    }
    // The mask: node j visible to node i iff j is on i's path to the root.
    const std::vector<uint64_t> mask = tree_mask(t.parents);
    for (int32_t i = 0; i <= n; ++i) {
      uint64_t want_row = 0;
      for (int32_t j = i;; j = t.parents[static_cast<size_t>(j - 1)]) {
        want_row |= uint64_t{1} << j;
        if (j == 0) break;
      }
      EXPECT_EQ(mask[static_cast<size_t>(i)], want_row) << "row " << i;
    }
  }
}

TEST(DraftTree, AcceptedPathWalksTheSampledChildren) {
  // A chain: the same as accepted_drafts.
  const std::vector<int32_t> chain = {5, 6, 7}, chain_parents = {0, 1, 2};
  for (const std::vector<int32_t>& sampled :
       {std::vector<int32_t>{5, 6, 7, 8}, {5, 6, 9, 1}, {4, 6, 7, 8}}) {
    const std::vector<int32_t> path = accepted_path(chain, chain_parents, sampled);
    EXPECT_EQ(static_cast<int32_t>(path.size()), accepted_drafts(chain, sampled));
    for (size_t i = 0; i < path.size(); ++i) EXPECT_EQ(path[i], static_cast<int32_t>(i) + 1);
  }
  // A star: only one level can stand.
  const std::vector<int32_t> star = {5, 6, 7}, star_parents = {0, 0, 0};
  EXPECT_EQ(accepted_path(star, star_parents, std::vector<int32_t>{7, 1, 1, 1}),
            (std::vector<int32_t>{3}));
  EXPECT_TRUE(accepted_path(star, star_parents, std::vector<int32_t>{8, 5, 6, 7}).empty());
  // Root -> {1: 5, 2: 6}; 1 -> {3: 8}; 2 -> {4: 8, 5: 9}; 4 -> {6: 1}.
  const std::vector<int32_t> tree = {5, 6, 8, 8, 9, 1}, parents = {0, 0, 1, 2, 2, 4};
  //                                        root 1  2  3  4  5  6
  EXPECT_EQ(accepted_path(tree, parents, std::vector<int32_t>{6, 0, 8, 0, 1, 0, 3}),
            (std::vector<int32_t>{2, 4, 6}));
  EXPECT_EQ(accepted_path(tree, parents, std::vector<int32_t>{6, 0, 9, 0, 1, 0, 3}),
            (std::vector<int32_t>{2, 5}));
  EXPECT_EQ(accepted_path(tree, parents, std::vector<int32_t>{5, 8, 0, 2, 0, 0, 0}),
            (std::vector<int32_t>{1, 3}));
}

}  // namespace
}  // namespace sgl::speculative
