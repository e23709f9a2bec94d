// How many drafts a verify step accepts: the scheduler (which keeps their KV) and EAGLE's batch
// runner (which extends its draft over them) must agree, so both call this.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace sgl::speculative {

// `sampled` [drafts.size() + 1]: row r sampled the token after input r (the last token, then
// draft r). Draft r + 1 stands when it equals row r's token: the longest such prefix of drafts.
// With the request's counter-based RNG each row draws what plain decoding would there, so the
// accepted drafts plus the row after them are exactly plain decoding's next tokens.
inline int32_t accepted_drafts(std::span<const int32_t> drafts, std::span<const int32_t> sampled) {
  int32_t accepted = 0;
  const auto n = static_cast<int32_t>(drafts.size());
  while (accepted < n &&
         sampled[static_cast<size_t>(accepted)] == drafts[static_cast<size_t>(accepted)]) {
    ++accepted;
  }
  return accepted;
}

// A draft tree's accepted path (--speculative-eagle-topk > 1): `parents` [drafts.size()] as
// DraftTree holds them (node r + 1's parent node), `sampled` [drafts.size() + 1] row r the token
// sampled after node r (each with its own depth's RNG step). From the root, the walk moves to the
// child whose token the current node sampled while there is one: the accepted nodes (1..n) in
// path order. Their tokens plus the last node's sample are plain decoding's next tokens.
inline std::vector<int32_t> accepted_path(std::span<const int32_t> drafts,
                                          std::span<const int32_t> parents,
                                          std::span<const int32_t> sampled) {
  std::vector<int32_t> path;
  int32_t node = 0;
  for (;;) {
    const int32_t token = sampled[static_cast<size_t>(node)];
    int32_t next = -1;
    for (size_t c = 0; c < drafts.size() && next < 0; ++c) {
      if (parents[c] == node && drafts[c] == token) next = static_cast<int32_t>(c) + 1;
    }
    if (next < 0) return path;
    path.push_back(next);
    node = next;
  }
}

}  // namespace sgl::speculative
