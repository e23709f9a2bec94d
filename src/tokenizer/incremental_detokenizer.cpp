// Incremental detokenization and stop-string matching.
#include "tokenizer/incremental_detokenizer.h"

#include <algorithm>

namespace sgl::tokenizer {
namespace {

bool ends_with_replacement_char(const std::string& s) {
  return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

}  // namespace

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer,
                                               const std::vector<int32_t>& prompt_ids,
                                               DecodeOptions options)
    : tokenizer_(tokenizer), options_(options) {
  const size_t n = std::min(prompt_ids.size(), kContextTokens);
  ids_.assign(prompt_ids.end() - static_cast<std::ptrdiff_t>(n), prompt_ids.end());
  context_len_ = n;
  surr_offset_ = 0;
  read_offset_ = n;
}

std::string IncrementalDetokenizer::decode_range(size_t begin, size_t end) const {
  return tokenizer_.decode(std::vector<int32_t>(ids_.begin() + static_cast<std::ptrdiff_t>(begin),
                                                ids_.begin() + static_cast<std::ptrdiff_t>(end)),
                           options_);
}

std::string IncrementalDetokenizer::add(const std::vector<int32_t>& ids) {
  ids_.insert(ids_.end(), ids.begin(), ids.end());
  const std::string prefix = decode_range(surr_offset_, read_offset_);
  const std::string text = decode_range(surr_offset_, ids_.size());
  // Hold back an incomplete character (decoded as U+FFFD) until its remaining bytes arrive.
  if (text.size() <= prefix.size() || ends_with_replacement_char(text) ||
      text.compare(0, prefix.size(), prefix) != 0) {
    return {};
  }
  std::string piece = text.substr(prefix.size());
  surr_offset_ = read_offset_;
  read_offset_ = ids_.size();
  emitted_ += piece;
  return piece;
}

std::string IncrementalDetokenizer::flush() {
  if (read_offset_ == ids_.size()) return {};
  const std::string prefix = decode_range(surr_offset_, read_offset_);
  const std::string text = decode_range(surr_offset_, ids_.size());
  std::string piece =
      text.compare(0, prefix.size(), prefix) == 0 ? text.substr(prefix.size()) : text;
  read_offset_ = ids_.size();
  emitted_ += piece;
  return piece;
}

std::string IncrementalDetokenizer::full_text() const {
  const std::string all = decode_range(0, ids_.size());
  const std::string context = decode_range(0, context_len_);
  return all.compare(0, context.size(), context) == 0 ? all.substr(context.size()) : all;
}

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops, bool keep_match)
    : stops_(std::move(stops)), keep_match_(keep_match) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

StopStringMatcher::Result StopStringMatcher::add(const std::string& piece) {
  pending_ += piece;
  Result result;
  // Earliest complete match wins.
  size_t best = std::string::npos;
  for (const std::string& stop : stops_) {
    const size_t at = pending_.find(stop);
    if (at != std::string::npos && (best == std::string::npos || at < best)) {
      best = at;
      result.matched_str = stop;
    }
  }
  if (best != std::string::npos) {
    result.text = pending_.substr(0, best + (keep_match_ ? result.matched_str.size() : 0));
    result.matched = true;
    pending_.clear();
    return result;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& stop : stops_) {
    for (size_t len = std::min(stop.size() - 1, pending_.size()); len > hold; --len) {
      if (pending_.compare(pending_.size() - len, len, stop, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  result.text = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return result;
}

std::string StopStringMatcher::flush() { return std::exchange(pending_, {}); }

}  // namespace sgl::tokenizer
