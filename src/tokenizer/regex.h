// Regex: a move-only PCRE2 pattern (UTF + UCP + JIT) that understands HF's Oniguruma patterns.
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

// HF tokenizers compiles its patterns with Oniguruma (Ruby syntax). This wrapper rewrites the
// few classes whose meaning differs under PCRE2 (\s, \S and \w, \W become Unicode White_Space /
// word classes; \h is a hex digit) and compiles with UTF, UCP and MULTILINE, then JIT.
// Immutable after compile; find_all is thread-safe.
class Regex {
 public:
  Regex();
  ~Regex();
  Regex(Regex&& other) noexcept;
  Regex& operator=(Regex&& other) noexcept;
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Fails with InvalidArgument naming the pattern and PCRE2's message.
  static Result<Regex> compile(std::string_view pattern);

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

// Rewrites an Oniguruma pattern into the equivalent PCRE2 pattern (exposed for tests).
std::string translate_oniguruma_pattern(std::string_view pattern);

}  // namespace sgl::tokenizer
