// Draft trees.
#include "speculative/draft_tree.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"

namespace sgl::speculative {

std::vector<TokenLogprob> top_k_logprobs(std::span<const float> logits, int32_t k) {
  const auto vocab = static_cast<int32_t>(logits.size());
  SGL_CHECK(k >= 1 && k <= vocab) << "top " << k << " of " << vocab << " logits";
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la != lb ? la > lb : a < b;
  });
  const float max = logits[static_cast<size_t>(ids[0])];
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x - max));
  // (x - max) <= 0 and log(sum) >= 0: every log-prob is <= 0, so scores only fall along a path.
  const auto log_sum = static_cast<float>(std::log(sum));
  std::vector<TokenLogprob> out(static_cast<size_t>(k));
  for (int32_t i = 0; i < k; ++i) {
    const int32_t id = ids[static_cast<size_t>(i)];
    out[static_cast<size_t>(i)] = {
        id, std::min(0.f, (logits[static_cast<size_t>(id)] - max) - log_sum)};
  }
  return out;
}

void DraftTreeBuilder::add_children(int32_t parent, std::span<const TokenLogprob> children) {
  SGL_CHECK(parent >= -1 && parent < size()) << "parent candidate " << parent;
  const float base = parent < 0 ? 0.f : candidate(parent).score;
  const int32_t depth = parent < 0 ? 1 : candidate(parent).depth + 1;
  for (const TokenLogprob& c : children) {
    // Adding a log-prob <= 0 never raises a float: the child never outscores its parent.
    candidates_.push_back({c.token, parent, depth, base + std::min(0.f, c.logprob)});
  }
}

bool DraftTreeBuilder::better(int32_t a, int32_t b) const {
  const Candidate &x = candidate(a), &y = candidate(b);
  if (x.score != y.score) return x.score > y.score;
  if (x.depth != y.depth) return x.depth < y.depth;
  return a < b;
}

std::vector<int32_t> DraftTreeBuilder::take_frontier() {
  std::vector<int32_t> step(candidates_.size() - step_begin_);
  std::iota(step.begin(), step.end(), static_cast<int32_t>(step_begin_));
  const size_t k = std::min(step.size(), static_cast<size_t>(topk_));
  std::partial_sort(step.begin(), step.begin() + static_cast<std::ptrdiff_t>(k), step.end(),
                    [this](int32_t a, int32_t b) { return better(a, b); });
  step.resize(k);
  step_begin_ = candidates_.size();
  return step;
}

DraftTree DraftTreeBuilder::select(int32_t n) const {
  SGL_CHECK(n >= 0 && n <= size()) << n << " nodes of " << size() << " candidates";
  std::vector<int32_t> order(candidates_.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [this](int32_t a, int32_t b) { return better(a, b); });
  order.resize(static_cast<size_t>(n));
  // Ranked order, then by depth: stable keeps the rank within a depth.
  std::stable_sort(order.begin(), order.end(), [this](int32_t a, int32_t b) {
    return candidate(a).depth < candidate(b).depth;
  });
  std::vector<int32_t> node_of(candidates_.size(), -1);  // candidate -> node (1..n)
  DraftTree tree;
  for (int32_t i = 0; i < n; ++i) {
    const Candidate& c = candidate(order[static_cast<size_t>(i)]);
    const int32_t parent = c.parent < 0 ? 0 : node_of[static_cast<size_t>(c.parent)];
    SGL_CHECK_GE(parent, 0) << "a chosen draft's parent was not chosen";
    node_of[static_cast<size_t>(order[static_cast<size_t>(i)])] = i + 1;
    tree.tokens.push_back(c.token);
    tree.parents.push_back(parent);
    tree.depths.push_back(c.depth);
  }
  return tree;
}

std::vector<uint64_t> tree_mask(std::span<const int32_t> parents) {
  const size_t n = parents.size();
  SGL_CHECK_LE(n, 63u) << "a tree mask row holds 64 nodes";
  std::vector<uint64_t> mask(n + 1);
  mask[0] = 1;
  for (size_t i = 1; i <= n; ++i) {
    const auto parent = static_cast<size_t>(parents[i - 1]);
    SGL_CHECK_LT(parent, i) << "node " << i << "'s parent " << parent << " does not precede it";
    mask[i] = mask[parent] | (uint64_t{1} << i);
  }
  return mask;
}

}  // namespace sgl::speculative
