// Prompt logprobs (SGLang's input_token_logprobs): the log-softmax of the raw logits at prompt
// position p, read at the prompt token p + 1 (teacher forcing), optionally with the top-k.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/sampler.h"

namespace sgl::sampling {

struct PromptLogprobs {
  int32_t begin = 0;            // first logits position scored: entry i scores token begin + 1 + i
  std::vector<float> logprobs;  // [n]
  std::vector<std::vector<TokenLogprob>> top;  // [n][k] when a top-k was asked, else empty
  // [n][m] when token_ids_logprob (m ids) was asked, else empty: the requested ids' logprobs.
  std::vector<std::vector<float>> token_ids = {};

  int32_t size() const { return static_cast<int32_t>(logprobs.size()); }
  int32_t end() const { return begin + size(); }
  bool empty() const { return logprobs.empty(); }
  // Appends `more`, which must start where this ends (the next prefill chunk). An empty `this`
  // takes `more` whole.
  void append(const PromptLogprobs& more);
};

// logits: f32 [targets.size(), vocab] on the host, row i holding the logits at position begin + i;
// targets[i] is the token at position begin + i + 1. top_k > 0 also lists the top-k per row;
// a non-empty token_ids also gives each row's logprobs of those ids.
PromptLogprobs score_prompt_tokens(const float* logits, int64_t vocab, int32_t begin,
                                   std::span<const int32_t> targets, int32_t top_k,
                                   std::span<const int32_t> token_ids = {});

}  // namespace sgl::sampling
