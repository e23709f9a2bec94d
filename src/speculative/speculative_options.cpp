// Speculative decoding options.
#include "speculative/speculative_options.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace sgl::speculative {

Status SpeculativeOptions::validate(bool num_draft_tokens_set) {
  if (!enabled()) return Status::ok_status();
  if (drafts_in_runner()) {
    if (draft_model_path.empty()) {
      return invalid_argument(
          "--speculative-algorithm EAGLE / EAGLE3 needs "
          "--speculative-draft-model-path (the draft head's directory)");
    }
    if (eagle_topk < 1 || eagle_topk > kMaxEagleTopk) {
      return invalid_argument("--speculative-eagle-topk must be in [1, " +
                              std::to_string(kMaxEagleTopk) + "], got " +
                              std::to_string(eagle_topk));
    }
    if (num_steps < 1 || num_steps > 63) {
      return invalid_argument("--speculative-num-steps must be in [1, 63], got " +
                              std::to_string(num_steps));
    }
    if (eagle_topk == 1) {
      // A chain of num_steps drafts verifies them with the last token (SGLang adjusts it too).
      if (num_draft_tokens_set && num_draft_tokens != num_steps + 1) {
        return invalid_argument(
            "--speculative-num-draft-tokens must be --speculative-num-steps + 1 (" +
            std::to_string(num_steps + 1) + ") with --speculative-eagle-topk 1, got " +
            std::to_string(num_draft_tokens));
      }
      num_draft_tokens = num_steps + 1;
    } else {
      // A tree verifies the root and its best nodes, of at most num_steps * topk drafted ones
      // (SGLang's bound); the default (8) is cut to that.
      const int32_t most = std::min(64, 1 + num_steps * eagle_topk);
      if (!num_draft_tokens_set) num_draft_tokens = std::min(num_draft_tokens, most);
      if (num_draft_tokens < 2 || num_draft_tokens > most) {
        return invalid_argument(
            "--speculative-num-draft-tokens must be in [2, " + std::to_string(most) +
            "] (1 + --speculative-num-steps * --speculative-eagle-topk, at most 64) with "
            "--speculative-eagle-topk " +
            std::to_string(eagle_topk) + ", got " + std::to_string(num_draft_tokens));
      }
    }
  } else if (!draft_model_path.empty()) {
    return invalid_argument(
        "--speculative-draft-model-path is for EAGLE / EAGLE3; NGRAM uses no draft model");
  }
  if (num_draft_tokens < 2 || num_draft_tokens > 64) {
    return invalid_argument(
        "--speculative-num-draft-tokens must be in [2, 64] (the last token and "
        "at least one draft), got " +
        std::to_string(num_draft_tokens));
  }
  if (bench_accept_length != 0) {
    if (drafts_in_runner() && eagle_topk != 1) {
      return invalid_argument(
          "--speculative-bench-accept-length takes chain drafts (--speculative-eagle-topk 1)");
    }
    if (bench_accept_length < 1 || bench_accept_length > num_draft_tokens) {
      return invalid_argument(
          "--speculative-bench-accept-length must be in [1, " + std::to_string(num_draft_tokens) +
          "] (--speculative-num-draft-tokens), got " + std::to_string(bench_accept_length));
    }
  }
  if (ngram_min_match_window < 1 || ngram_max_match_window < ngram_min_match_window ||
      ngram_max_match_window > 64) {
    return invalid_argument(
        "--speculative-ngram-min-match-window-size must be >= 1 and at most "
        "--speculative-ngram-max-match-window-size (<= 64)");
  }
  return Status::ok_status();
}

Result<SpeculativeAlgorithm> parse_speculative_algorithm(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (upper == "NGRAM") return SpeculativeAlgorithm::kNgram;
  if (upper == "EAGLE") return SpeculativeAlgorithm::kEagle;
  if (upper == "EAGLE3") return SpeculativeAlgorithm::kEagle3;
  if (upper == "STANDALONE" || upper == "NEXTN") {
    return invalid_argument("--speculative-algorithm " + std::string(name) +
                            ": a standalone draft model or MTP layers are not implemented "
                            "(EAGLE, EAGLE3 and NGRAM are)");
  }
  return invalid_argument("--speculative-algorithm must be EAGLE, EAGLE3 or NGRAM, got '" +
                          std::string(name) + "'");
}

}  // namespace sgl::speculative
