// An EAGLE tree's next frontier, chosen where the draft step's top k are (the device, on a GPU),
// so the tree's steps queue back to back without the host (EagleTree). DraftTreeBuilder's rule:
// the k best of the k x k children of this step's frontier, by path score (the parent's plus
// min(0, the child's log-prob)), ties to the child added first (frontier order, then rank).
// One call per request row; the host builds the same tree from the same children afterwards.
#pragma once

#include <cstdint>

#include "backend/stream.h"
#include "core/host_device.h"

namespace sgl::runner {

// Arrays of one step t (0-based: the step over the depth t + 1 frontier) and of step t + 1, over
// `rows` request rows of k branches each; branch i = b * k + f is request row b's frontier node f.
struct TreeSelectArgs {
  int32_t k = 0;
  int32_t steps = 0;  // steps in all (the tree's depth is steps + 1)
  int32_t t = 0;      // this step, 0 <= t < steps
  int32_t trash_slot = 0;
  const int32_t* draft_to_target = nullptr;  // EAGLE-3's id map; null: ids are target ids
  // This step: each branch's top k children (draft ids, mapped to target ids in place;
  // log-probs), [rows * k * k]; each frontier node's path score [rows * k].
  int32_t* child_ids = nullptr;
  const float* child_logprobs = nullptr;
  const float* scores = nullptr;
  // Written for step t + 1 (unless t is the last): the frontier's input ids, the rows of this
  // step's hidden outputs they read (their parents' branches) and their scores [rows * k]; the
  // KV list tail of each branch (its ancestors' slots and its own, after its request's
  // prefix_lens[b] prefix slots at kv_indptr[i]).
  int32_t* next_ids = nullptr;
  int32_t* next_sources = nullptr;
  float* next_scores = nullptr;
  // [steps][stride]: which child of step s - 1 (f * k + j: frontier node f's j-th) step s's
  // frontier node is, for s >= 1 (step 0's frontier is the first distribution's top k, in
  // order); step t + 1's is written.
  int32_t* children = nullptr;
  int32_t rows = 0;
  int64_t stride = 0;  // >= rows * k
  // [rows]: step s's node f of row b stores its K/V at slot_bases[b] + s * k + f (the draft
  // pool's scratch slots); -1: a padding row, whose K/V go to trash_slot.
  const int32_t* slot_bases = nullptr;
  const int32_t* prefix_lens = nullptr;  // [rows]
  const int32_t* kv_indptr = nullptr;    // [rows * k + 1]
  int32_t* kv_indices = nullptr;
};

// Request row b's step t + 1 frontier (and its children's ids as target ids).
SGL_HOST_DEVICE inline void apply_tree_select(const TreeSelectArgs& a, int32_t b) {
  const int32_t k = a.k, n = k * k, first = b * k;
  int32_t* ids = a.child_ids + static_cast<int64_t>(first) * k;
  if (a.draft_to_target != nullptr) {
    for (int32_t c = 0; c < n; ++c) ids[c] = a.draft_to_target[ids[c]];
  }
  if (a.t + 1 >= a.steps) return;
  const int64_t stride = a.stride;
  const float* logprobs = a.child_logprobs + static_cast<int64_t>(first) * k;
  auto score = [&](int32_t c) {
    const float lp = logprobs[c];
    return a.scores[first + c / k] + (lp < 0.f ? lp : 0.f);
  };
  for (int32_t c = 0; c < n; ++c) {
    const float sc = score(c);
    int32_t rank = 0;  // the children that rank before c
    for (int32_t d = 0; d < n && rank < k; ++d) {
      const float sd = score(d);
      rank += sd > sc || (sd == sc && d < c);
    }
    if (rank >= k) continue;
    const int32_t i = first + rank;  // the new frontier node's branch
    a.next_ids[i] = ids[c];
    a.next_sources[i] = first + c / k;
    a.next_scores[i] = sc;
    a.children[(a.t + 1) * stride + i] = c;
  }
  // Each new branch's KV list tail: its own slot at step t + 1, then its ancestors' back to
  // depth 1 (step s's node f is child children[s][f] of step s - 1's node that child / k).
  const int32_t base = a.slot_bases[b];
  for (int32_t f = 0; f < k; ++f) {
    int32_t* tail = a.kv_indices + a.kv_indptr[first + f] + a.prefix_lens[b];
    int32_t node = f;
    for (int32_t s = a.t + 1; s >= 0; --s) {
      tail[s] = base >= 0 ? base + s * k + node : a.trash_slot;
      if (s > 0) node = a.children[s * stride + first + node] / k;
    }
  }
}

namespace cuda {
// apply_tree_select for every request row, on the device (args' pointers: device memory).
void apply_tree_select(const TreeSelectArgs& args, backend::Stream stream);
}  // namespace cuda

}  // namespace sgl::runner
