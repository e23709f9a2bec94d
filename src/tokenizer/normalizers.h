// Normalizer: the tokenizer.json text normalization steps (NFC, Replace, Prepend, Strip, ...).
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tokenizer/regex.h"

namespace sgl::tokenizer {

namespace normalizer {
enum class UnicodeForm { kNfc, kNfd, kNfkc, kNfkd };
struct Unicode {
  UnicodeForm form;
};
struct Lowercase {};
struct ByteLevel {};     // maps every byte to the GPT-2 byte-level alphabet
struct StripAccents {};  // removes combining marks (Mn)
struct Strip {
  bool left = true;
  bool right = true;
};
struct Prepend {
  std::string prefix;
};
struct ReplaceString {
  std::string pattern;
  std::string content;
};
struct ReplaceRegex {
  Regex regex;
  std::string content;
};
}  // namespace normalizer

using NormalizerStep =
    std::variant<normalizer::Unicode, normalizer::Lowercase, normalizer::ByteLevel,
                 normalizer::StripAccents, normalizer::Strip, normalizer::Prepend,
                 normalizer::ReplaceString, normalizer::ReplaceRegex>;

// A flattened Sequence of steps, applied in order. Empty = identity. Immutable after build.
class Normalizer {
 public:
  void add(NormalizerStep step) { steps_.push_back(std::move(step)); }
  bool empty() const { return steps_.empty(); }
  // Normalizes `text` (valid UTF-8) in place.
  void normalize(std::string& text) const;

 private:
  std::vector<NormalizerStep> steps_;
};

// Replaces every occurrence of `pattern` (non-empty) in `text` with `content`.
std::string replace_all(std::string_view text, std::string_view pattern, std::string_view content);
// Replaces every match of `regex` in `text` with `content` (taken literally).
std::string replace_all(std::string_view text, const Regex& regex, std::string_view content);

}  // namespace sgl::tokenizer
