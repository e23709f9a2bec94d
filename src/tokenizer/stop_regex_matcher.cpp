// StopRegexMatcher: every pattern over the whole generated text after each piece.
#include "tokenizer/stop_regex_matcher.h"

#include <utility>

namespace sgl::tokenizer {

Result<StopRegexMatcher> StopRegexMatcher::compile(const std::vector<std::string>& patterns) {
  StopRegexMatcher m;
  for (const std::string& p : patterns) {
    SGL_ASSIGN_OR_RETURN(Regex regex, Regex::compile(p, RegexSyntax::kPython));
    m.regexes_.push_back(std::move(regex));
  }
  return m;
}

std::optional<StopRegexMatcher::Match> StopRegexMatcher::add(std::string_view piece) {
  if (regexes_.empty()) return std::nullopt;
  text_.append(piece);
  std::optional<Match> best;
  for (const Regex& regex : regexes_) {
    Regex::Matches matches(regex, text_);
    ByteRange range;
    if (matches.next(range) && (!best || range.end < best->end)) {
      best = Match{range.end, regex.pattern()};
    }
  }
  return best;
}

}  // namespace sgl::tokenizer
