// N-gram drafts by a backwards scan (tokens are a request's own: thousands, not millions).
#include "speculative/ngram_drafter.h"

#include <algorithm>

namespace sgl::speculative {

std::vector<int32_t> ngram_draft(std::span<const int32_t> tokens, int32_t max_tokens,
                                 int32_t min_window, int32_t max_window) {
  const auto n = static_cast<int64_t>(tokens.size());
  if (max_tokens <= 0 || n < 2) return {};
  for (int64_t w = std::min<int64_t>(max_window, n - 1); w >= min_window; --w) {
    const std::span<const int32_t> suffix = tokens.subspan(n - w);
    // An earlier occurrence ends at e < n - 1 (start e - w + 1 >= 0); the latest one wins, as
    // recent text predicts best.
    for (int64_t e = n - 2; e >= w - 1; --e) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + (e - w + 1))) continue;
      // The tokens after the occurrence; past the sequence's end the drafts themselves (the
      // text repeats with period n - 1 - e, as a loop or a list does).
      std::vector<int32_t> drafts;
      drafts.reserve(static_cast<size_t>(max_tokens));
      for (int64_t j = e + 1; static_cast<int32_t>(drafts.size()) < max_tokens; ++j) {
        drafts.push_back(j < n ? tokens[static_cast<size_t>(j)]
                               : drafts[static_cast<size_t>(j - n)]);
      }
      return drafts;
    }
  }
  return {};
}

}  // namespace sgl::speculative
