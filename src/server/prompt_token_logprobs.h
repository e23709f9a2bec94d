// Prompt tokens as logprob listings (completions echo + logprobs, /generate
// input_token_logprobs): one entry per prompt token from a start position, the first without a
// logprob (SGLang pads it with None; OpenAI has nothing before the first prompt token).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sampling/prompt_logprobs.h"
#include "tokenizer/tokenizer.h"

namespace sgl::server {

struct PromptTokenEntry {
  int32_t id = 0;
  std::string text;
  std::optional<float> logprob;  // none for the first entry (or when scores are missing)
  // The top-k at the position before this token (none where logprob is none).
  std::optional<std::vector<sampling::TokenLogprob>> top;
  std::vector<std::string> top_texts;  // aligned with top, when texts are asked for
  // The requested token ids' logprobs at the position before this token (token_ids_logprob;
  // none where logprob is none or none were asked), and their texts when asked for.
  std::optional<std::vector<float>> token_ids_logprobs;
  std::vector<std::string> token_ids_texts;
};

// Entries for prompt[start:]. `scores` (the engine's prompt logprobs, rows from `start`) may be
// null or short (an aborted request): those entries have no logprob. Texts are filled only when
// `with_texts`; `token_ids` (the requested ids scores->token_ids are of) only for their texts.
std::vector<PromptTokenEntry> prompt_token_entries(const tokenizer::Tokenizer& tokenizer,
                                                   std::span<const int32_t> prompt, int32_t start,
                                                   const sampling::PromptLogprobs* scores,
                                                   bool with_texts,
                                                   std::span<const int32_t> token_ids = {});

}  // namespace sgl::server
