// SpeculativeOptions: SGLang's --speculative-* flags as the scheduler reads them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace sgl::speculative {

enum class SpeculativeAlgorithm : uint8_t {
  kNone,
  kNgram,   // drafts looked up in the request's own prompt and output (SGLang's NGRAM)
  kEagle,   // a draft head over the target's last hidden states (EAGLE-1/2)
  kEagle3,  // a draft head over three of the target's layers (EAGLE-3)
};

// --speculative-eagle-topk's bound: a draft step runs topk branches per request.
inline constexpr int32_t kMaxEagleTopk = 10;

struct SpeculativeOptions {
  SpeculativeAlgorithm algorithm = SpeculativeAlgorithm::kNone;
  // Tokens one verify step checks per request, the last sampled token included (SGLang's
  // --speculative-num-draft-tokens counts its tree's root too): up to this - 1 drafts.
  int32_t num_draft_tokens = 8;
  // Suffix lengths the n-gram lookup tries, longest first (SGLang's
  // --speculative-ngram-{min,max}-match-window-size).
  int32_t ngram_min_match_window = 1;
  int32_t ngram_max_match_window = 12;
  // EAGLE / EAGLE3: the draft head's directory (SGLang's --speculative-draft-model-path), its
  // draft steps per verify (--speculative-num-steps) and branching (--speculative-eagle-topk:
  // 1, a chain; more, a tree of num_draft_tokens - 1 drafts).
  std::string draft_model_path;
  int32_t num_steps = 3;
  int32_t eagle_topk = 1;
  // --speculative-draft-policy adaptive: the drafts a decode step verifies per request are
  // chosen per batch size from the measured throughput of each count, 0 (plain decode)
  // included (speculative/draft_length_policy.h). The command lines default to it; off here,
  // so a library user (and a test) gets num_draft_tokens - 1 drafts every step.
  bool adaptive_drafts = false;
  // sgl-bench only (--speculative-bench-accept-length): every chain verify step yields this
  // many tokens (this - 1 drafts taken as accepted whatever the target samples, then the
  // sample after them), so the engine's real step costs are measured at a chosen accept length.
  // The output is not the model's. 0: off.
  int32_t bench_accept_length = 0;

  bool enabled() const { return algorithm != SpeculativeAlgorithm::kNone; }
  // EAGLE's drafts come from a draft model the batch runner runs: the scheduler reserves their
  // slots with placeholder ids and learns the drafts from the batch's result.
  bool drafts_in_runner() const {
    return algorithm == SpeculativeAlgorithm::kEagle || algorithm == SpeculativeAlgorithm::kEagle3;
  }
  // Checks the values; for a chain (eagle_topk 1) sets num_draft_tokens to num_steps + 1, as
  // SGLang does (`num_draft_tokens_set`: whether the flag was given, to say so when it differs);
  // for a tree cuts the default to 1 + num_steps * eagle_topk.
  Status validate(bool num_draft_tokens_set = false);
};

// "NGRAM", "EAGLE", "EAGLE3" (SGLang's names; case-insensitive); STANDALONE / NEXTN are refused
// naming what is missing.
Result<SpeculativeAlgorithm> parse_speculative_algorithm(std::string_view name);

}  // namespace sgl::speculative
