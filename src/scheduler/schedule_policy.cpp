// Waiting-queue orderings: fcfs, lof, random, lpm (longest cached prefix first) and dfs-weight
// (depth-first over the radix tree, heavier subtrees first, so requests sharing a prefix run
// together).
#include "scheduler/schedule_policy.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <vector>

namespace sgl::scheduler {
namespace {

// Prefix length of each waiting request's tokens in the tree, and the node ending it.
std::unordered_map<const Req*, cache::MatchResult> match_all(const std::deque<Req*>& waiting,
                                                             cache::RadixCache& tree) {
  std::unordered_map<const Req*, cache::MatchResult> matches;
  for (const Req* r : waiting) {
    matches[r] = tree.match_prefix(r->all_token_ids(), r->request.cache_namespace);
  }
  return matches;
}

void order_by_dfs_weight(std::deque<Req*>& waiting, cache::RadixCache& tree) {
  auto matches = match_all(waiting, tree);
  // Requests hanging off each node, in queue order; node weight = requests in its subtree.
  std::unordered_map<const cache::TreeNode*, std::vector<Req*>> at_node;
  std::unordered_map<const cache::TreeNode*, int64_t> weight;
  for (Req* r : waiting) {
    const cache::TreeNode* node = matches[r].last_node;
    at_node[node].push_back(r);
    for (const cache::TreeNode* n = node; n != nullptr; n = n->parent()) ++weight[n];
  }
  std::vector<Req*> ordered;
  ordered.reserve(waiting.size());
  // Iterative DFS from each namespace's root (the default's first): a node's own requests, then
  // children by weight descending (ties: smaller first token, for determinism). Only nodes with
  // weight > 0 are visited.
  std::vector<const cache::TreeNode*> stack = tree.roots();
  std::reverse(stack.begin(), stack.end());
  while (!stack.empty()) {
    const cache::TreeNode* node = stack.back();
    stack.pop_back();
    if (auto it = at_node.find(node); it != at_node.end()) {
      ordered.insert(ordered.end(), it->second.begin(), it->second.end());
    }
    std::vector<const cache::TreeNode*> children;
    node->for_each_child([&](const cache::TreeNode* child) {
      if (weight.count(child)) children.push_back(child);
    });
    std::sort(children.begin(), children.end(), [&](const auto* a, const auto* b) {
      if (weight[a] != weight[b]) return weight[a] > weight[b];
      return a->key()[0] < b->key()[0];
    });
    for (auto it = children.rbegin(); it != children.rend(); ++it) stack.push_back(*it);
  }
  waiting.assign(ordered.begin(), ordered.end());
}

}  // namespace

SchedulePolicy sort_waiting_queue(SchedulePolicy policy, const PriorityOptions& priority,
                                  std::deque<Req*>& waiting, cache::RadixCache& tree,
                                  std::mt19937_64& rng) {
  if ((policy == SchedulePolicy::kLpm && waiting.size() > kLpmFallbackQueueSize) ||
      ((policy == SchedulePolicy::kLpm || policy == SchedulePolicy::kDfsWeight) &&
       tree.disabled())) {
    policy = SchedulePolicy::kFcfs;
  }
  switch (policy) {
    case SchedulePolicy::kFcfs:
      break;  // arrival order (retracted requests were put back at the front)
    case SchedulePolicy::kLof:
      std::stable_sort(waiting.begin(), waiting.end(), [](const Req* a, const Req* b) {
        return a->request.max_new_tokens > b->request.max_new_tokens;
      });
      break;
    case SchedulePolicy::kRandom:
      std::shuffle(waiting.begin(), waiting.end(), rng);
      break;
    case SchedulePolicy::kLpm: {
      auto matches = match_all(waiting, tree);
      std::stable_sort(waiting.begin(), waiting.end(), [&](const Req* a, const Req* b) {
        return matches[a].device_indices.size() > matches[b].device_indices.size();
      });
      break;
    }
    case SchedulePolicy::kDfsWeight:
      order_by_dfs_weight(waiting, tree);
      break;
  }
  if (priority.enabled) {
    std::stable_sort(waiting.begin(), waiting.end(), [&](const Req* a, const Req* b) {
      return priority.prefers(a->priority, b->priority);
    });
  }
  return policy;
}

}  // namespace sgl::scheduler
