// IncrementalDetokenizer: turns a growing list of token ids into text pieces for streaming,
// emitting only at complete UTF-8 characters (SGLang's surr_offset / read_offset scheme).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace sgl::tokenizer {

class IncrementalDetokenizer {
 public:
  // Context tokens decode together with the first outputs so that pieces that depend on their
  // left neighbour (sentencepiece's leading space) come out as they would mid-text; SGLang uses
  // the last 5 prompt tokens. Borrows `tokenizer`.
  static constexpr size_t kContextTokens = 5;
  IncrementalDetokenizer(const Tokenizer& tokenizer, const std::vector<int32_t>& prompt_ids,
                         DecodeOptions options = {});

  // Appends new ids; returns the text that became final (possibly empty: a partial UTF-8
  // character waits for its next byte).
  std::string add(const std::vector<int32_t>& ids);
  // At the end: whatever is still held back (a dangling partial character decodes as U+FFFD).
  std::string flush();

  // All text emitted so far == full_text() once flushed.
  const std::string& emitted() const { return emitted_; }
  // The reference the stream must equal: decode(context + outputs) minus decode(context).
  std::string full_text() const;

 private:
  std::string decode_range(size_t begin, size_t end) const;

  const Tokenizer& tokenizer_;
  DecodeOptions options_;
  std::vector<int32_t> ids_;  // context + outputs
  size_t context_len_ = 0;
  size_t surr_offset_ = 0;  // decode window start
  size_t read_offset_ = 0;  // ids before this are emitted
  std::string emitted_;
};

// Matches stop strings across piece boundaries: text that could still be the start of a stop
// string is held back until it is ruled in or out.
class StopStringMatcher {
 public:
  // keep_match (SGLang's no_stop_trim): the text ends with the matched stop string instead of
  // right before it.
  explicit StopStringMatcher(std::vector<std::string> stops, bool keep_match = false);

  struct Result {
    std::string text;      // safe to emit now
    bool matched = false;  // a stop string completed; text ends right before it (or with it)
    std::string matched_str;
  };
  Result add(const std::string& piece);
  std::string flush();  // the held-back tail, when generation ends without a match
  bool empty() const { return stops_.empty(); }

 private:
  std::vector<std::string> stops_;
  bool keep_match_ = false;
  std::string pending_;
};

}  // namespace sgl::tokenizer
