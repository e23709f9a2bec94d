// Splitting text on pattern matches with HF's delimiter behaviours (Isolated, Removed, ...).
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "tokenizer/regex.h"

namespace sgl::tokenizer {

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// A piece of the subject: a pattern match or the text between two matches.
struct MatchSpan {
  size_t begin = 0;
  size_t end = 0;
  bool is_match = false;
};

// Spans covering `text` (a single non-match span when empty) from regex matches.
std::vector<MatchSpan> regex_spans(std::string_view text, const Regex& regex);
// Spans where every occurrence of the literal `needle` is a match.
std::vector<MatchSpan> literal_spans(std::string_view text, std::string_view needle);
// Spans where every character satisfying `pred` is its own match.
std::vector<MatchSpan> char_spans(std::string_view text, const std::function<bool(char32_t)>& pred);

// Applies `behavior` to `spans` and returns the non-empty ranges to keep, in order.
std::vector<ByteRange> apply_split_behavior(const std::vector<MatchSpan>& spans,
                                            SplitBehavior behavior);

}  // namespace sgl::tokenizer
