// PreTokenizer: splits normalized text into words (ByteLevel, Split, Metaspace, Digits, ...).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tokenizer/regex.h"
#include "tokenizer/split_pattern.h"

namespace sgl::tokenizer {

namespace pre_tokenizer {
struct ByteLevel {
  bool add_prefix_space = true;
  bool use_regex = true;  // split with GPT-2's regex before mapping bytes
};
struct SplitRegex {
  Regex regex;
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
};
struct SplitString {
  std::string pattern;
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
};
enum class PrependScheme { kAlways, kFirst, kNever };
struct Metaspace {
  std::string replacement = "\xE2\x96\x81";  // U+2581
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  bool split = true;
};
struct Digits {
  bool individual_digits = false;
};
struct Punctuation {
  SplitBehavior behavior = SplitBehavior::kIsolated;
};
struct Whitespace {};       // \w+|[^\w\s]+ runs; whitespace dropped
struct WhitespaceSplit {};  // split on whitespace, dropped
struct Bert {};             // whitespace split, then punctuation isolated
struct CharDelimiter {
  char32_t delimiter = ' ';
};
}  // namespace pre_tokenizer

using PreTokenizerStep =
    std::variant<pre_tokenizer::ByteLevel, pre_tokenizer::SplitRegex, pre_tokenizer::SplitString,
                 pre_tokenizer::Metaspace, pre_tokenizer::Digits, pre_tokenizer::Punctuation,
                 pre_tokenizer::Whitespace, pre_tokenizer::WhitespaceSplit, pre_tokenizer::Bert,
                 pre_tokenizer::CharDelimiter>;

// Receives each word; the view is valid only during the call.
using WordSink = std::function<void(std::string_view word)>;

// A flattened Sequence of steps. Empty = the whole text is one word. Immutable after build.
class PreTokenizer {
 public:
  void add(PreTokenizerStep step) { steps_.push_back(std::move(step)); }
  bool empty() const { return steps_.empty(); }

  // Passes the non-empty words of `text` to `sink`, in order. `at_start` says whether `text`
  // begins at offset 0 of the caller's input (Metaspace's "first" prepend scheme depends on it).
  // Each piece goes through all the steps before the next is cut, so memory stays a small
  // multiple of `text` however many words it has.
  void pre_tokenize(std::string_view text, bool at_start, const WordSink& sink) const;

 private:
  std::vector<PreTokenizerStep> steps_;
};

}  // namespace sgl::tokenizer
