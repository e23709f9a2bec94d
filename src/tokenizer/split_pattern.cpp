// SplitRanges: HF's delimiter behaviours, mirroring NormalizedString::split in HF tokenizers,
// applied to one span at a time.
#include "tokenizer/split_pattern.h"

namespace sgl::tokenizer {

bool SplitRanges::push(const MatchSpan& span, ByteRange& out) {
  bool completed = false;
  auto complete = [&](size_t begin, size_t end) {
    if (end <= begin) return;
    out = {begin, end};
    completed = true;
  };
  // Starts a new held-back range, completing the one held before.
  auto hold = [&] {
    if (has_pending_) complete(pending_.begin, pending_.end);
    pending_ = span;
    has_pending_ = true;
  };
  switch (behavior_) {
    case SplitBehavior::kIsolated:
      complete(span.begin, span.end);
      break;
    case SplitBehavior::kRemoved:
      if (!span.is_match) complete(span.begin, span.end);
      break;
    case SplitBehavior::kContiguous:
      // Consecutive spans of one kind form one range.
      if (has_pending_ && span.is_match == previous_match_) {
        pending_.end = span.end;
      } else {
        hold();
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      // A match right after a non-match joins it.
      if (has_pending_ && span.is_match && !previous_match_) {
        pending_.end = span.end;
      } else {
        hold();
      }
      break;
    case SplitBehavior::kMergedWithNext:
      // A match joins the non-match right after it; only a match is ever held back.
      if (has_pending_ && !span.is_match) {
        complete(pending_.begin, span.end);
        has_pending_ = false;
      } else if (span.is_match) {
        hold();
      } else {
        complete(span.begin, span.end);
      }
      break;
  }
  previous_match_ = span.is_match;
  return completed;
}

bool SplitRanges::finish(ByteRange& out) {
  if (!has_pending_) return false;
  has_pending_ = false;
  if (pending_.end <= pending_.begin) return false;
  out = {pending_.begin, pending_.end};
  return true;
}

}  // namespace sgl::tokenizer
