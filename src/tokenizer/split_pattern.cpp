// Match spans and delimiter behaviours, mirroring NormalizedString::split in HF tokenizers.
#include "tokenizer/split_pattern.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace sgl::tokenizer {
namespace {

std::vector<MatchSpan> spans_from_matches(std::string_view text,
                                          const std::vector<ByteRange>& matches) {
  std::vector<MatchSpan> spans;
  if (text.empty()) {
    spans.push_back({0, 0, false});
    return spans;
  }
  spans.reserve(matches.size() * 2 + 1);
  size_t prev = 0;
  for (const ByteRange& m : matches) {
    if (prev != m.begin) spans.push_back({prev, m.begin, false});
    spans.push_back({m.begin, m.end, true});
    prev = m.end;
  }
  if (prev != text.size()) spans.push_back({prev, text.size(), false});
  return spans;
}

}  // namespace

std::vector<MatchSpan> regex_spans(std::string_view text, const Regex& regex) {
  std::vector<ByteRange> matches;
  if (!text.empty()) regex.find_all(text, matches);
  return spans_from_matches(text, matches);
}

std::vector<MatchSpan> literal_spans(std::string_view text, std::string_view needle) {
  std::vector<ByteRange> matches;
  if (!needle.empty()) {
    size_t pos = 0;
    while ((pos = text.find(needle, pos)) != std::string_view::npos) {
      matches.push_back({pos, pos + needle.size()});
      pos += needle.size();
    }
  }
  return spans_from_matches(text, matches);
}

std::vector<MatchSpan> char_spans(std::string_view text,
                                  const std::function<bool(char32_t)>& pred) {
  std::vector<ByteRange> matches;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t begin = pos;
    if (pred(unicode::decode_utf8(text, pos))) matches.push_back({begin, pos});
  }
  return spans_from_matches(text, matches);
}

std::vector<ByteRange> apply_split_behavior(const std::vector<MatchSpan>& spans,
                                            SplitBehavior behavior) {
  // Each entry: a range and whether it is dropped.
  std::vector<MatchSpan> acc;
  acc.reserve(spans.size());
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const MatchSpan& s : spans) acc.push_back({s.begin, s.end, false});
      break;
    case SplitBehavior::kRemoved:
      acc = spans;  // is_match doubles as "remove"
      break;
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const MatchSpan& s : spans) {
        if (s.is_match == previous_match && !acc.empty()) {
          acc.back().end = s.end;
        } else {
          acc.push_back({s.begin, s.end, false});
        }
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const MatchSpan& s : spans) {
        if (s.is_match && !previous_match && !acc.empty()) {
          acc.back().end = s.end;
        } else {
          acc.push_back({s.begin, s.end, false});
        }
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !acc.empty()) {
          acc.back().begin = it->begin;
        } else {
          acc.push_back({it->begin, it->end, false});
        }
        previous_match = it->is_match;
      }
      std::reverse(acc.begin(), acc.end());
      break;
    }
  }
  std::vector<ByteRange> out;
  out.reserve(acc.size());
  for (const MatchSpan& s : acc) {
    if (!s.is_match && s.end > s.begin) out.push_back({s.begin, s.end});
  }
  return out;
}

}  // namespace sgl::tokenizer
