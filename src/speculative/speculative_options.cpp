// Speculative decoding options.
#include "speculative/speculative_options.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace sgl::speculative {

Status SpeculativeOptions::validate() const {
  if (!enabled()) return Status::ok_status();
  if (num_draft_tokens < 2 || num_draft_tokens > 64) {
    return invalid_argument(
        "--speculative-num-draft-tokens must be in [2, 64] (the last token and "
        "at least one draft), got " +
        std::to_string(num_draft_tokens));
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
  if (upper == "EAGLE" || upper == "EAGLE3" || upper == "STANDALONE" || upper == "NEXTN") {
    return invalid_argument("--speculative-algorithm " + std::string(name) +
                            ": draft-model speculative decoding is not implemented yet (NGRAM is)");
  }
  return invalid_argument(
      "--speculative-algorithm must be NGRAM (EAGLE, EAGLE3 are not "
      "implemented yet), got '" +
      std::string(name) + "'");
}

}  // namespace sgl::speculative
