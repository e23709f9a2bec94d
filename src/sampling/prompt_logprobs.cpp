// Prompt logprobs: teacher-forced scoring of prompt tokens from logits rows.
#include "sampling/prompt_logprobs.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace sgl::sampling {
void PromptLogprobs::append(const PromptLogprobs& more) {
  if (more.empty()) return;
  if (empty()) {
    *this = more;
    return;
  }
  SGL_CHECK_EQ(more.begin, end()) << "prompt logprobs must arrive in order";
  logprobs.insert(logprobs.end(), more.logprobs.begin(), more.logprobs.end());
  top.insert(top.end(), more.top.begin(), more.top.end());
  token_ids.insert(token_ids.end(), more.token_ids.begin(), more.token_ids.end());
}

PromptLogprobs score_prompt_tokens(const float* logits, int64_t vocab, int32_t begin,
                                   std::span<const int32_t> targets, int32_t top_k,
                                   std::span<const int32_t> token_ids) {
  PromptLogprobs out;
  out.begin = begin;
  out.logprobs.reserve(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    const float* row = logits + static_cast<int64_t>(i) * vocab;
    SGL_CHECK(targets[i] >= 0 && targets[i] < vocab) << "prompt token " << targets[i];
    out.logprobs.push_back(static_cast<float>(row[targets[i]] - log_sum_exp(row, vocab)));
    if (top_k > 0) out.top.push_back(top_logprobs_of(row, vocab, top_k));
    if (!token_ids.empty()) out.token_ids.push_back(logprobs_of_ids(row, vocab, token_ids));
  }
  return out;
}

}  // namespace sgl::sampling
