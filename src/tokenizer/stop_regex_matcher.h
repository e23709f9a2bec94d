// StopRegexMatcher: SGLang's stop_regex — generation stops once any pattern (Python `re`
// syntax) matches somewhere in the text generated so far, each piece searched only where a new
// match can be.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/regex.h"

namespace sgl::tokenizer {

class StopRegexMatcher {
 public:
  StopRegexMatcher() = default;
  // InvalidArgument naming the first pattern that does not compile.
  static Result<StopRegexMatcher> compile(const std::vector<std::string>& patterns);

  struct Match {
    size_t end = 0;       // bytes of the generated text through the end of the match
    std::string pattern;  // the pattern that matched (the earliest-ending match wins)
  };
  // Appends `piece` to the generated text and searches it; nullopt while no pattern matches (a
  // search past the backtracking limit of regex.h counts as no match). A match may start in text
  // seen before: a pattern whose matches examine at most E bytes (max_match_extent) is searched
  // from E bytes before the piece, where the first match must lie since none was found before;
  // an unbounded one over the whole text (as SGLang).
  std::optional<Match> add(std::string_view piece);
  bool empty() const { return regexes_.empty(); }
  // The generated text so far (empty without patterns).
  const std::string& text() const { return text_; }

 private:
  std::vector<Regex> regexes_;
  std::vector<std::optional<size_t>> extents_;  // max_match_extent of each pattern
  std::string text_;
};

}  // namespace sgl::tokenizer
