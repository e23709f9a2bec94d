// EAGLE-2 draft trees (SGLang's select_top_k_tokens and build_tree, --speculative-eagle-topk > 1):
// step 1 takes the k most likely first drafts; each later step expands the k best nodes so far
// (the frontier) into their k most likely children, scoring each node by its path's summed draft
// log-probs. The verify pass checks the n best nodes of all steps at once, each attending to the
// prefix, its ancestors and itself (tree_mask).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace sgl::speculative {

// A draft token and its log-probability under the draft distribution it came from.
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.f;
};

// The k most likely tokens of `logits` [vocab] with their log-softmax values, most likely first
// (ties: the lower id first). k <= vocab.
std::vector<TokenLogprob> top_k_logprobs(std::span<const float> logits, int32_t k);

// One request's draft tree for a verify pass: node 0 is the verified last token (the root), nodes
// 1..n the drafts, ordered by depth, so a parent always precedes its children.
struct DraftTree {
  std::vector<int32_t> tokens;   // [n]: node i + 1's token
  std::vector<int32_t> parents;  // [n]: node i + 1's parent node, in [0, i]
  std::vector<int32_t> depths;   // [n]: node i + 1's depth (1 for the root's children)
};

// Grows one request's candidates step by step as the draft runs.
class DraftTreeBuilder {
 public:
  struct Candidate {
    int32_t token = 0;
    int32_t parent = -1;  // candidate index; -1: the root
    int32_t depth = 1;
    float score = 0.f;  // the path's summed draft log-probs: never above the parent's
  };

  explicit DraftTreeBuilder(int32_t topk) : topk_(topk) {}

  // Children of candidate `parent` (-1: the root, step 1), `children` its draft distribution's
  // top k (top_k_logprobs).
  void add_children(int32_t parent, std::span<const TokenLogprob> children);
  // The k best candidates added since the previous call, best first (ties: added first): the
  // nodes the next draft step expands.
  std::vector<int32_t> take_frontier();
  // The tree of the n best candidates (n <= size()). Ties go to the shallower node, then the one
  // added first: a child's score never exceeds its parent's, so a chosen node's parent is
  // always chosen. Nodes are ordered by depth, then rank.
  DraftTree select(int32_t n) const;

  const Candidate& candidate(int32_t i) const { return candidates_[static_cast<size_t>(i)]; }
  int32_t size() const { return static_cast<int32_t>(candidates_.size()); }

 private:
  // Candidate a ranks before candidate b.
  bool better(int32_t a, int32_t b) const;

  int32_t topk_;
  std::vector<Candidate> candidates_;
  size_t step_begin_ = 0;  // the first candidate added since take_frontier()
};

// The tree's attention mask over its n + 1 nodes (the root then `parents` [n], as DraftTree holds
// them; n <= 63): row i has bit j set when node j is node i or one of its ancestors.
std::vector<uint64_t> tree_mask(std::span<const int32_t> parents);

}  // namespace sgl::speculative
