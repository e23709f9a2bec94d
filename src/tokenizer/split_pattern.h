// Splitting text on pattern matches with HF's delimiter behaviours (Isolated, Removed, ...),
// one range at a time: nothing is stored per match.
#pragma once

#include <string_view>

#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"

namespace sgl::tokenizer {

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// A piece of the subject: a pattern match or the text between two matches.
struct MatchSpan {
  size_t begin = 0;
  size_t end = 0;
  bool is_match = false;
};

// Turns the spans covering a subject, fed in order, into the non-empty ranges `behavior` keeps
// (HF's NormalizedString::split): push() every span, then finish(). At most one span is held
// back (a run being merged).
class SplitRanges {
 public:
  explicit SplitRanges(SplitBehavior behavior) : behavior_(behavior) {}

  // Takes the next span; true when that completes a range, which is then in `out`.
  bool push(const MatchSpan& span, ByteRange& out);
  // True when a range was still held back, which is then in `out`.
  bool finish(ByteRange& out);

 private:
  SplitBehavior behavior_;
  MatchSpan pending_;
  bool has_pending_ = false;
  bool previous_match_ = false;
};

// Calls emit(ByteRange) for each range of a `size`-byte subject that `behavior` keeps, left to
// right. next_match(ByteRange&) yields the pattern's matches in order (false after the last);
// `invert` swaps the roles of the matches and the text between them.
template <typename NextMatch, typename Emit>
void split_ranges(size_t size, NextMatch&& next_match, SplitBehavior behavior, bool invert,
                  Emit&& emit) {
  if (size == 0) return;  // an empty subject keeps nothing, whatever the behaviour
  SplitRanges ranges(behavior);
  ByteRange out;
  auto push = [&](size_t begin, size_t end, bool is_match) {
    if (ranges.push({begin, end, is_match != invert}, out)) emit(out);
  };
  size_t previous_end = 0;
  ByteRange match;
  while (next_match(match)) {
    if (previous_end != match.begin) push(previous_end, match.begin, false);
    push(match.begin, match.end, true);
    previous_end = match.end;
  }
  if (previous_end != size) push(previous_end, size, false);
  if (ranges.finish(out)) emit(out);
}

// Match sources for split_ranges; `text` must outlive them.

// Every occurrence of the literal `needle`, left to right, not overlapping (none when empty).
inline auto literal_matches(std::string_view text, std::string_view needle) {
  return [text, needle, pos = size_t{0}](ByteRange& match) mutable {
    if (needle.empty()) return false;
    pos = text.find(needle, pos);
    if (pos == std::string_view::npos) return false;
    match = {pos, pos + needle.size()};
    pos += needle.size();
    return true;
  };
}

// Every character (valid UTF-8) for which pred(char32_t) holds, each a match of its own.
template <typename Pred>
auto char_matches(std::string_view text, Pred pred) {
  return [text, pred, pos = size_t{0}](ByteRange& match) mutable {
    while (pos < text.size()) {
      const size_t begin = pos;
      if (pred(unicode::decode_utf8(text, pos))) {
        match = {begin, pos};
        return true;
      }
    }
    return false;
  };
}

}  // namespace sgl::tokenizer
