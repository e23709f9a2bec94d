// Regex: a move-only PCRE2 pattern (UTF + UCP + JIT) that understands HF's Oniguruma patterns
// and, for request fields written for Python's `re` (stop_regex), Python's meaning of ^ and $.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace sgl::tokenizer {

// Half-open byte range [begin, end) inside a subject string.
struct ByteRange {
  size_t begin = 0;
  size_t end = 0;
};

// Whose pattern language a pattern is written in.
enum class RegexSyntax {
  kOniguruma,  // HF tokenizers' patterns (below)
  // Python's `re` on str patterns: PCRE2 with Unicode classes (\w, \d, \s as Python 3's) and
  // without MULTILINE (^ and $ at the subject's ends, $ also before a final newline).
  kPython,
};

// HF tokenizers compiles its patterns with Oniguruma (Ruby syntax). This wrapper rewrites the
// few classes whose meaning differs under PCRE2 (\s, \S and \w, \W become Unicode White_Space /
// word classes; \h is a hex digit) and compiles with UTF, UCP and MULTILINE, then JIT.
// Immutable after compile; find_all, and Matches over one Regex, may run on many threads at once.
class Regex {
 public:
  class Matches;

  Regex();
  ~Regex();
  Regex(Regex&& other) noexcept;
  Regex& operator=(Regex&& other) noexcept;
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Fails with InvalidArgument naming the pattern and PCRE2's message. kPython patterns (from
  // requests) search under a backtracking limit: past it, a search finds no match.
  static Result<Regex> compile(std::string_view pattern,
                               RegexSyntax syntax = RegexSyntax::kOniguruma);

  // Appends every non-overlapping match of `subject` (valid UTF-8), left to right, to `out`.
  // Empty matches are reported; the search then resumes one character later. If PCRE2 gives
  // up (resource limits), the rest of the subject is treated as containing no match.
  void find_all(std::string_view subject, std::vector<ByteRange>& out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string pattern_;
};

// The matches of one subject, one at a time, exactly as find_all reports them, so that a caller
// need not hold them all. One per thread; `regex` and `subject` must outlive it.
class Regex::Matches {
 public:
  // Matches starting at or after byte `start` (a character boundary); lookbehinds, \b and ^
  // still see the subject before it.
  Matches(const Regex& regex, std::string_view subject, size_t start = 0);
  ~Matches();
  Matches(const Matches&) = delete;
  Matches& operator=(const Matches&) = delete;

  // The next match into `match`; false when there is none left.
  bool next(ByteRange& match);

 private:
  const Impl* impl_;
  void* data_ = nullptr;  // pcre2_match_data; null when there is nothing to match
  std::string_view subject_;
  size_t pos_ = 0;
  size_t last_match_end_;
};

// Rewrites an Oniguruma pattern into the equivalent PCRE2 pattern (exposed for tests).
std::string translate_oniguruma_pattern(std::string_view pattern);

}  // namespace sgl::tokenizer
