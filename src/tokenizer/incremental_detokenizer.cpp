// Incremental detokenization and stop-string matching.
#include "tokenizer/incremental_detokenizer.h"

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace sgl::tokenizer {
namespace {

bool ends_with_replacement_char(const std::string& s) {
  return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

size_t utf8_chars(std::string_view s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<uint8_t>(c) >> 6) != 2; }));
}

// Bytes of `text` past `window`, the text its first ids decoded to before. Where the window ended
// in a cut character (U+FFFD: a prompt cut mid-character), past its whole characters: the
// completed character is new text. Where the decoder renders the window's ids differently now
// (a stray byte turns a byte-fallback run into U+FFFDs), past as many characters as the window
// had, as SGLang slices its read text by the surrounding text's length: the stream goes on
// instead of stalling.
size_t new_text_start(const std::string& text, const std::string& window) {
  if (text.compare(0, window.size(), window) == 0) return window.size();
  std::string whole = window;
  while (ends_with_replacement_char(whole)) whole.resize(whole.size() - 3);
  if (whole.size() < window.size() && text.compare(0, whole.size(), whole) == 0) {
    return whole.size();
  }
  size_t chars = utf8_chars(window), at = 0;
  for (; at < text.size() && chars > 0; ++at) {
    if (at + 1 == text.size() || (static_cast<uint8_t>(text[at + 1]) >> 6) != 2) --chars;
  }
  return at;
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
  const size_t start = new_text_start(text, prefix);
  if (text.size() <= start || ends_with_replacement_char(text)) return {};
  std::string piece = text.substr(start);
  // A window that ended in a cut character keeps its start: the window after must begin at a
  // whole character, or the decoder renders its leading bytes as U+FFFDs.
  if (!ends_with_replacement_char(prefix)) surr_offset_ = read_offset_;
  read_offset_ = ids_.size();
  emitted_ += piece;
  return piece;
}

std::string IncrementalDetokenizer::flush() {
  if (read_offset_ == ids_.size()) return {};
  const std::string prefix = decode_range(surr_offset_, read_offset_);
  const std::string text = decode_range(surr_offset_, ids_.size());
  std::string piece = text.substr(std::min(new_text_start(text, prefix), text.size()));
  read_offset_ = ids_.size();
  emitted_ += piece;
  return piece;
}

std::string IncrementalDetokenizer::full_text() const {
  const std::string all = decode_range(0, ids_.size());
  const std::string context = decode_range(0, context_len_);
  return all.substr(std::min(new_text_start(all, context), all.size()));
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
