// AddedVocabulary: added/special tokens, matched in the text before normalization and the model.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/normalizers.h"

namespace sgl::tokenizer {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool single_word = false;  // match only when not inside a word
  bool lstrip = false;       // the match swallows whitespace on its left
  bool rstrip = false;       // ... and on its right
  bool normalized = true;    // matched against normalized text (content normalized too)
  bool special = false;      // skipped by decode(skip_special_tokens)
};

// A piece of text: either an added token (id >= 0) or plain text to run through the pipeline.
struct TextSegment {
  size_t begin = 0;
  size_t end = 0;
  int32_t id = -1;
};

// Immutable after build; find() is const and thread-safe.
class AddedVocabulary {
 public:
  // Builds the two matchers (raw and normalized). Normalized tokens' contents are normalized
  // with `normalizer` first, as HF does. Tokens with empty content are ignored.
  void build(const std::vector<AddedToken>& tokens, const Normalizer& normalizer);

  bool empty() const { return raw_.empty() && normalized_.empty(); }

  // Splits `text` into segments covering it, leftmost-longest, honouring single_word, lstrip
  // and rstrip. `normalized` selects the matcher for already-normalized text.
  std::vector<TextSegment> split(std::string_view text, bool normalized) const;

 private:
  // A byte trie over token contents.
  class Trie {
   public:
    void insert(std::string_view key, int32_t value);
    bool empty() const { return nodes_.size() <= 1; }
    // Longest key that starts at text[pos]: its value and length, or {-1, 0}.
    std::pair<int32_t, size_t> longest_match(std::string_view text, size_t pos) const;
    bool may_start(unsigned char b) const { return (first_bytes_[b >> 6] >> (b & 63)) & 1; }

   private:
    struct Node {
      std::vector<std::pair<unsigned char, int32_t>> children;  // sorted by byte
      int32_t value = -1;
    };
    std::vector<Node> nodes_{1};
    uint64_t first_bytes_[4] = {0, 0, 0, 0};
  };

  Trie raw_;
  Trie normalized_;
  std::vector<AddedToken> tokens_;  // indexed by the tries' values
};

}  // namespace sgl::tokenizer
