// apply_tree_select (runner/eagle_tree_select.h): over random trees (log-probs drawn from a few
// values, so scores tie; some positive, which the score clamps), every step's frontier is what
// DraftTreeBuilder takes (the same nodes, order, ids mapped to target ids, scores), each branch's
// hidden input is its parent's row and its KV list tail its ancestors' scratch slots; padding
// rows store at the trash slot. On CUDA the kernel writes what the host function writes.
#include "runner/eagle_tree_select.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#include "speculative/draft_tree.h"
#ifdef SGL_TEST_ON_CUDA
#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_stream.h"
#include "device_vectors.h"
#endif

namespace sgl::runner {
namespace {

constexpr int32_t kTrash = 0;
constexpr int32_t kPrefix = 5;  // every row's prefix slots: 100 * b + 0..kPrefix-1

// A tree's arrays over `rows` rows (the first bs real) of k branches, `steps` steps, as EagleTree
// lays them out (stride = rows * k + 1: not the batch's own width).
struct Trees {
  int32_t k, steps, rows, bs, stride;
  std::vector<int32_t> d2t;  // empty: EAGLE
  std::vector<int32_t> child_ids, next_ids, next_sources, children, slot_bases, prefix_lens,
      kv_indptr, kv_indices;
  std::vector<float> child_logprobs, scores, next_scores;

  TreeSelectArgs args(
      int32_t t,
      const std::function<int32_t*(std::vector<int32_t>&)>& ints =
          [](std::vector<int32_t>& v) { return v.data(); },
      const std::function<float*(std::vector<float>&)>& floats =
          [](std::vector<float>& v) { return v.data(); }) {
    return {.k = k,
            .steps = steps,
            .t = t,
            .trash_slot = kTrash,
            .draft_to_target = d2t.empty() ? nullptr : ints(d2t),
            .child_ids = ints(child_ids),
            .child_logprobs = floats(child_logprobs),
            .scores = floats(scores),
            .next_ids = ints(next_ids),
            .next_sources = ints(next_sources),
            .next_scores = floats(next_scores),
            .children = ints(children),
            .rows = rows,
            .stride = stride,
            .slot_bases = ints(slot_bases),
            .prefix_lens = ints(prefix_lens),
            .kv_indptr = ints(kv_indptr),
            .kv_indices = ints(kv_indices)};
  }
};

Trees random_trees(std::mt19937& rng, bool eagle3) {
  auto uniform = [&](int32_t lo, int32_t hi) {
    return std::uniform_int_distribution<int32_t>(lo, hi)(rng);
  };
  Trees x{};
  x.k = uniform(2, 6);
  x.steps = uniform(2, 5);
  x.rows = uniform(1, 6);
  x.bs = uniform(1, x.rows);
  x.stride = x.rows * x.k + 1;
  if (eagle3) {
    for (int32_t i = 0; i < 50; ++i) x.d2t.push_back(1000 + 3 * i);
  }
  const size_t branches = static_cast<size_t>(x.rows * x.k);
  x.next_ids.assign(branches, -1);
  x.next_sources.assign(branches, -1);
  x.next_scores.assign(branches, 1.f);
  x.children.assign(static_cast<size_t>(x.steps * x.stride), -1);
  x.kv_indptr.push_back(0);
  for (int32_t b = 0; b < x.rows; ++b) {
    const bool real = b < x.bs;
    x.slot_bases.push_back(real ? 500 + 100 * b : -1);
    x.prefix_lens.push_back(real ? kPrefix : 0);
    for (int32_t f = 0; f < x.k; ++f) {
      for (int32_t p = 0; real && p < kPrefix; ++p) x.kv_indices.push_back(100 * b + p);
      for (int32_t s = 0; s < x.steps; ++s) x.kv_indices.push_back(-1);
      x.kv_indptr.push_back(static_cast<int32_t>(x.kv_indices.size()));
    }
  }
  // Step 0's frontier: the first distribution's top k, in order (scores non-increasing).
  float score = 0.f;
  for (size_t i = 0; i < branches; ++i) {
    if (i % static_cast<size_t>(x.k) == 0) score = 0.f;
    score -= 0.5f * static_cast<float>(uniform(0, 1));
    x.scores.push_back(score);
  }
  return x;
}

// Step t's children: random ids (draft vocabulary of 50) and log-probs from a few values.
void random_children(std::mt19937& rng, Trees& x) {
  const float values[] = {-0.5f, -1.f, -1.5f, -3.f, 0.25f};
  x.child_ids.clear();
  x.child_logprobs.clear();
  for (int32_t i = 0; i < x.rows * x.k * x.k; ++i) {
    x.child_ids.push_back(std::uniform_int_distribution<int32_t>(0, 49)(rng));
    x.child_logprobs.push_back(values[std::uniform_int_distribution<int>(0, 4)(rng)]);
  }
}

// Step t + 1's arrays become the next step's inputs.
void advance(Trees& x) { x.scores = x.next_scores; }

TEST(TreeSelect, TheFrontierIsDraftTreeBuildersAndTheBranchesReadTheirAncestors) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    Trees x = random_trees(rng, trial % 2 == 1);
    const int32_t k = x.k;
    // The host's trees of the real rows, and each step's frontier nodes.
    std::vector<speculative::DraftTreeBuilder> trees(static_cast<size_t>(x.bs),
                                                     speculative::DraftTreeBuilder(k));
    std::vector<std::vector<std::vector<int32_t>>> frontiers(static_cast<size_t>(x.bs));
    for (int32_t b = 0; b < x.bs; ++b) {
      std::vector<speculative::TokenLogprob> first;
      for (int32_t f = 0; f < k; ++f)
        first.push_back({f, x.scores[static_cast<size_t>(b * k + f)]});
      trees[b].add_children(-1, first);
      frontiers[b].push_back(trees[b].take_frontier());
    }
    for (int32_t t = 0; t < x.steps; ++t) {
      random_children(rng, x);
      const std::vector<int32_t> draft_ids = x.child_ids;
      const TreeSelectArgs args = x.args(t);
      for (int32_t b = 0; b < x.rows; ++b) apply_tree_select(args, b);
      for (int32_t b = 0; b < x.bs; ++b) {
        SCOPED_TRACE(::testing::Message() << "trial " << trial << " step " << t << " row " << b);
        const int32_t begin = trees[b].size();
        for (int32_t f = 0; f < k; ++f) {
          std::vector<speculative::TokenLogprob> children;
          for (int32_t j = 0; j < k; ++j) {
            const auto at = static_cast<size_t>((b * k + f) * k + j);
            const int32_t id = x.d2t.empty() ? draft_ids[at] : x.d2t[draft_ids[at]];
            EXPECT_EQ(x.child_ids[at], id);  // mapped to a target id in place
            children.push_back({id, x.child_logprobs[at]});
          }
          trees[b].add_children(frontiers[b].back()[static_cast<size_t>(f)], children);
        }
        frontiers[b].push_back(trees[b].take_frontier());
        if (t + 1 == x.steps) continue;  // the last step chooses nothing
        for (int32_t f = 0; f < k; ++f) {
          const int32_t i = b * k + f, node = frontiers[b].back()[static_cast<size_t>(f)];
          const speculative::DraftTreeBuilder::Candidate& c = trees[b].candidate(node);
          EXPECT_EQ(x.children[static_cast<size_t>((t + 1) * x.stride + i)], node - begin);
          EXPECT_EQ(x.next_ids[static_cast<size_t>(i)], c.token);
          EXPECT_EQ(x.next_scores[static_cast<size_t>(i)], c.score);
          EXPECT_EQ(x.next_sources[static_cast<size_t>(i)], b * k + (node - begin) / k);
          // The tail: each ancestor's (and its own) slot, at its step's frontier position.
          std::vector<int32_t> want;
          int32_t depth = t + 2;
          for (int32_t a = node; a >= 0; a = trees[b].candidate(a).parent) {
            const std::vector<int32_t>& at_step = frontiers[b][static_cast<size_t>(--depth)];
            const auto pos = std::find(at_step.begin(), at_step.end(), a) - at_step.begin();
            want.insert(want.begin(), x.slot_bases[static_cast<size_t>(b)] + depth * k +
                                          static_cast<int32_t>(pos));
          }
          const auto list = x.kv_indices.begin() + x.kv_indptr[static_cast<size_t>(i)] + kPrefix;
          EXPECT_EQ(std::vector<int32_t>(list, list + t + 2), want);
        }
      }
      // Padding rows attend to the trash slot only.
      for (int32_t i = x.bs * k; i < x.rows * k && t + 1 < x.steps; ++i) {
        const auto list = x.kv_indices.begin() + x.kv_indptr[static_cast<size_t>(i)];
        EXPECT_EQ(std::vector<int32_t>(list, list + t + 2), std::vector<int32_t>(t + 2, kTrash));
      }
      if (t + 1 < x.steps) advance(x);
    }
  }
}

#ifdef SGL_TEST_ON_CUDA
// The CUDA kernel writes what the host function writes.
TEST(TreeSelectCuda, TheKernelWritesWhatTheHostWrites) {
  backend::CudaAllocator gpu(0);
  backend::CudaStream stream(0);
  std::mt19937 rng(6);
  for (int trial = 0; trial < 100; ++trial) {
    Trees host = random_trees(rng, trial % 2 == 0);
    for (int32_t t = 0; t < host.steps; ++t) {
      random_children(rng, host);
      Trees device = host;
      test::DeviceVectors copies(gpu, stream.get());
      const TreeSelectArgs args = device.args(
          t, [&](std::vector<int32_t>& v) { return copies(v); },
          [&](std::vector<float>& v) { return copies(v); });
      cuda::apply_tree_select(args, stream.get());
      copies.copy_back();
      const TreeSelectArgs host_args = host.args(t);
      for (int32_t b = 0; b < host.rows; ++b) apply_tree_select(host_args, b);
      SCOPED_TRACE(::testing::Message() << "trial " << trial << " step " << t);
      EXPECT_EQ(device.child_ids, host.child_ids);
      EXPECT_EQ(device.next_ids, host.next_ids);
      EXPECT_EQ(device.next_sources, host.next_sources);
      EXPECT_EQ(device.next_scores, host.next_scores);
      EXPECT_EQ(device.children, host.children);
      EXPECT_EQ(device.kv_indices, host.kv_indices);
      if (t + 1 < host.steps) advance(host);
    }
  }
}
#endif

}  // namespace
}  // namespace sgl::runner
