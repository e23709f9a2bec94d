// SpeculativeOptions: SGLang's --speculative-* flags as the scheduler reads them.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/status.h"

namespace sgl::speculative {

enum class SpeculativeAlgorithm : uint8_t {
  kNone,
  kNgram,  // drafts looked up in the request's own prompt and output (SGLang's NGRAM)
};

struct SpeculativeOptions {
  SpeculativeAlgorithm algorithm = SpeculativeAlgorithm::kNone;
  // Tokens one verify step checks per request, the last sampled token included (SGLang's
  // --speculative-num-draft-tokens counts its tree's root too): up to this - 1 drafts.
  int32_t num_draft_tokens = 8;
  // Suffix lengths the n-gram lookup tries, longest first (SGLang's
  // --speculative-ngram-{min,max}-match-window-size).
  int32_t ngram_min_match_window = 1;
  int32_t ngram_max_match_window = 12;

  bool enabled() const { return algorithm != SpeculativeAlgorithm::kNone; }
  Status validate() const;
};

// "NGRAM" (SGLang's name; case-insensitive) -> kNgram; EAGLE / EAGLE3 / STANDALONE are refused
// naming the missing draft-model support.
Result<SpeculativeAlgorithm> parse_speculative_algorithm(std::string_view name);

}  // namespace sgl::speculative
