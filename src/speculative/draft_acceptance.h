// How many drafts a verify step accepts: the scheduler (which keeps their KV) and EAGLE's batch
// runner (which extends its draft over them) must agree, so both call this.
#pragma once

#include <cstdint>
#include <span>

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

}  // namespace sgl::speculative
