// StopRegexMatcher: every pattern over the end of the generated text after each piece.
#include "tokenizer/stop_regex_matcher.h"

#include <utility>

#include "tokenizer/regex_extent.h"

namespace sgl::tokenizer {

Result<StopRegexMatcher> StopRegexMatcher::compile(const std::vector<std::string>& patterns) {
  StopRegexMatcher m;
  for (const std::string& p : patterns) {
    SGL_ASSIGN_OR_RETURN(Regex regex, Regex::compile(p, RegexSyntax::kPython));
    m.regexes_.push_back(std::move(regex));
    m.extents_.push_back(max_match_extent(p));
  }
  return m;
}

std::optional<StopRegexMatcher::Match> StopRegexMatcher::add(std::string_view piece) {
  if (regexes_.empty()) return std::nullopt;
  const size_t seen = text_.size();
  text_.append(piece);
  std::optional<Match> best;
  for (size_t i = 0; i < regexes_.size(); ++i) {
    const Regex& regex = regexes_[i];
    size_t start = 0;
    if (extents_[i] && seen > *extents_[i]) {
      start = seen - *extents_[i];
      while (start > 0 && (static_cast<unsigned char>(text_[start]) & 0xC0) == 0x80) --start;
    }
    Regex::Matches matches(regex, text_, start);
    ByteRange range;
    if (matches.next(range) && (!best || range.end < best->end)) {
      best = Match{range.end, regex.pattern()};
    }
  }
  return best;
}

}  // namespace sgl::tokenizer
