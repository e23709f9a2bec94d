// Decoder: turns token strings back into text (ByteLevel, ByteFallback, Metaspace, Strip, ...).
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tokenizer/pre_tokenizers.h"
#include "tokenizer/regex.h"

namespace sgl::tokenizer {

namespace decoder {
struct ByteLevel {};     // byte-level characters -> bytes, lossy UTF-8 (one output token)
struct ByteFallback {};  // runs of <0xXX> tokens -> their UTF-8 text (U+FFFD per byte if invalid)
struct Fuse {};          // concatenates all tokens into one
struct ReplaceString {
  std::string pattern;
  std::string content;
};
struct ReplaceRegex {
  Regex regex;
  std::string content;
};
struct Strip {
  std::string content = " ";  // one character
  size_t start = 0;           // occurrences removed from each token's left
  size_t stop = 0;            // ... and right
};
struct Metaspace {
  std::string replacement = "\xE2\x96\x81";
  pre_tokenizer::PrependScheme prepend_scheme = pre_tokenizer::PrependScheme::kAlways;
};
struct WordPiece {
  std::string prefix = "##";
  bool cleanup = true;
};
struct BpeSuffix {  // HF "BPEDecoder": the end-of-word suffix becomes a space
  std::string suffix = "</w>";
};
}  // namespace decoder

using DecoderStep = std::variant<decoder::ByteLevel, decoder::ByteFallback, decoder::Fuse,
                                 decoder::ReplaceString, decoder::ReplaceRegex, decoder::Strip,
                                 decoder::Metaspace, decoder::WordPiece, decoder::BpeSuffix>;

// A flattened Sequence of decoders. With no decoder at all (tokenizer.json "decoder": null),
// tokens are joined with spaces, as HF does. Immutable after build.
class Decoder {
 public:
  void add(DecoderStep step) {
    steps_.push_back(std::move(step));
    present_ = true;
  }
  // Marks a decoder as present even if it has no steps (an empty Sequence joins with "").
  void set_present() { present_ = true; }

  std::string decode(std::vector<std::string> tokens) const;
  // The bytes `token` adds to a decoded text when it sits in the middle of it: the per-token
  // steps applied without UTF-8 repair (a token may hold part of a character), the steps that
  // depend on the token's place in the sequence (Strip after Fuse, Metaspace's first-token rule)
  // left out. Constrained decoding matches grammars against these bytes.
  std::string token_bytes(std::string_view token) const;

 private:
  std::vector<DecoderStep> steps_;
  bool present_ = false;
};

// transformers' clean_up_tokenization: removes the space before punctuation and contractions.
std::string clean_up_tokenization(std::string_view text);

}  // namespace sgl::tokenizer
