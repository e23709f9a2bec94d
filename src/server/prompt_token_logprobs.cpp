// Prompt-token logprob entries.
#include "server/prompt_token_logprobs.h"

#include <algorithm>

#include "server/token_text.h"

namespace sgl::server {

std::vector<PromptTokenEntry> prompt_token_entries(const tokenizer::Tokenizer& tokenizer,
                                                   std::span<const int32_t> prompt, int32_t start,
                                                   const sampling::PromptLogprobs* scores,
                                                   bool with_texts,
                                                   std::span<const int32_t> token_ids) {
  std::vector<PromptTokenEntry> entries;
  const auto len = static_cast<int32_t>(prompt.size());
  for (int32_t q = std::max(start, 0); q < len; ++q) {
    PromptTokenEntry e;
    e.id = prompt[q];
    // Token q is scored by the logits at position q - 1: row (q - 1 - scores->begin).
    const int32_t row = scores ? q - 1 - scores->begin : -1;
    if (q > start && scores && row >= 0 && row < scores->size()) {
      e.logprob = scores->logprobs[row];
      if (static_cast<size_t>(row) < scores->top.size()) e.top = scores->top[row];
      if (static_cast<size_t>(row) < scores->token_ids.size()) {
        e.token_ids_logprobs = scores->token_ids[row];
      }
    }
    if (with_texts) {
      const auto context = prompt.subspan(0, q);
      e.text = token_text(tokenizer, context, e.id);
      if (e.top) {
        for (const sampling::TokenLogprob& t : *e.top) {
          e.top_texts.push_back(token_text(tokenizer, context, t.id));
        }
      }
      if (e.token_ids_logprobs) {
        for (int32_t id : token_ids)
          e.token_ids_texts.push_back(token_text(tokenizer, context, id));
      }
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

}  // namespace sgl::server
