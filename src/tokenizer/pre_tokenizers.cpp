// Pre-tokenizer steps, each mirroring the HF tokenizers pre-tokenizer of the same name.
#include "tokenizer/pre_tokenizers.h"

#include "core/check.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/unicode.h"

namespace sgl::tokenizer {
namespace {

// GPT-2's word-splitting pattern, used by the ByteLevel pre-tokenizer when use_regex is set.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

const Regex& gpt2_regex() {
  static const Regex regex = [] {
    Result<Regex> compiled = Regex::compile(kGpt2Pattern);
    SGL_CHECK(compiled.ok()) << compiled.status().to_string();
    return std::move(compiled).value();
  }();
  return regex;
}

struct Piece {
  std::string text;
  bool at_start = false;  // begins at offset 0 of the original input
};

using Pieces = std::vector<Piece>;

// Replaces each piece by the ranges `split` keeps of it.
template <typename SpansFn>
void split_pieces(Pieces& pieces, SpansFn&& spans_of, SplitBehavior behavior, bool invert) {
  Pieces out;
  out.reserve(pieces.size());
  for (Piece& piece : pieces) {
    std::vector<MatchSpan> spans = spans_of(std::string_view(piece.text));
    if (invert) {
      for (MatchSpan& s : spans) s.is_match = !s.is_match;
    }
    const std::vector<ByteRange> ranges = apply_split_behavior(spans, behavior);
    if (ranges.size() == 1 && ranges[0].begin == 0 && ranges[0].end == piece.text.size()) {
      out.push_back(std::move(piece));
      continue;
    }
    for (const ByteRange& r : ranges) {
      out.push_back({piece.text.substr(r.begin, r.end - r.begin), piece.at_start && r.begin == 0});
    }
  }
  pieces = std::move(out);
}

char32_t first_char(std::string_view s) {
  size_t pos = 0;
  return s.empty() ? 0 : unicode::decode_utf8(s, pos);
}

// Runs of word characters and runs of other non-space characters; whitespace is dropped.
void split_whitespace_words(Pieces& pieces) {
  enum class Kind { kSpace, kWord, kOther };
  Pieces out;
  for (Piece& piece : pieces) {
    const std::string_view text = piece.text;
    size_t pos = 0;
    size_t run_begin = 0;
    Kind run_kind = Kind::kSpace;
    auto flush = [&](size_t end) {
      if (run_kind != Kind::kSpace && end > run_begin) {
        out.push_back({std::string(text.substr(run_begin, end - run_begin)),
                       piece.at_start && run_begin == 0});
      }
    };
    while (pos < text.size()) {
      const size_t begin = pos;
      const char32_t c = unicode::decode_utf8(text, pos);
      const Kind kind = unicode::is_word_char(c)    ? Kind::kWord
                        : unicode::is_whitespace(c) ? Kind::kSpace
                                                    : Kind::kOther;
      if (kind != run_kind) {
        flush(begin);
        run_begin = begin;
        run_kind = kind;
      }
    }
    flush(text.size());
  }
  pieces = std::move(out);
}

struct StepApplier {
  Pieces& pieces;

  void operator()(const pre_tokenizer::ByteLevel& step) const {
    if (step.add_prefix_space) {
      for (Piece& p : pieces) {
        if (p.text.empty() || p.text[0] != ' ') p.text.insert(p.text.begin(), ' ');
      }
    }
    if (step.use_regex) {
      split_pieces(
          pieces, [](std::string_view t) { return regex_spans(t, gpt2_regex()); },
          SplitBehavior::kIsolated, false);
    }
    const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::get();
    for (Piece& p : pieces) {
      std::string mapped;
      alphabet.encode(p.text, mapped);
      p.text = std::move(mapped);
    }
  }
  void operator()(const pre_tokenizer::SplitRegex& step) const {
    split_pieces(
        pieces, [&](std::string_view t) { return regex_spans(t, step.regex); }, step.behavior,
        step.invert);
  }
  void operator()(const pre_tokenizer::SplitString& step) const {
    split_pieces(
        pieces, [&](std::string_view t) { return literal_spans(t, step.pattern); }, step.behavior,
        step.invert);
  }
  void operator()(const pre_tokenizer::Metaspace& step) const {
    const char32_t replacement = first_char(step.replacement);
    for (Piece& p : pieces) {
      if (p.text.find(' ') != std::string::npos)
        p.text = replace_all(p.text, " ", step.replacement);
      const bool starts_with_replacement = p.text.rfind(step.replacement, 0) == 0;
      const bool prepend =
          !starts_with_replacement &&
          (step.prepend_scheme == pre_tokenizer::PrependScheme::kAlways ||
           (step.prepend_scheme == pre_tokenizer::PrependScheme::kFirst && p.at_start));
      if (prepend) p.text.insert(0, step.replacement);
    }
    if (step.split) {
      split_pieces(
          pieces,
          [&](std::string_view t) {
            return char_spans(t, [&](char32_t c) { return c == replacement; });
          },
          SplitBehavior::kMergedWithNext, false);
    }
  }
  void operator()(const pre_tokenizer::Digits& step) const {
    split_pieces(
        pieces, [](std::string_view t) { return char_spans(t, unicode::is_numeric); },
        step.individual_digits ? SplitBehavior::kIsolated : SplitBehavior::kContiguous, false);
  }
  void operator()(const pre_tokenizer::Punctuation& step) const {
    split_pieces(
        pieces, [](std::string_view t) { return char_spans(t, unicode::is_punctuation); },
        step.behavior, false);
  }
  void operator()(const pre_tokenizer::Whitespace&) const { split_whitespace_words(pieces); }
  void operator()(const pre_tokenizer::WhitespaceSplit&) const {
    split_pieces(
        pieces, [](std::string_view t) { return char_spans(t, unicode::is_whitespace); },
        SplitBehavior::kRemoved, false);
  }
  void operator()(const pre_tokenizer::Bert&) const {
    (*this)(pre_tokenizer::WhitespaceSplit{});
    (*this)(pre_tokenizer::Punctuation{SplitBehavior::kIsolated});
  }
  void operator()(const pre_tokenizer::CharDelimiter& step) const {
    const char32_t delimiter = step.delimiter;
    split_pieces(
        pieces,
        [&](std::string_view t) {
          return char_spans(t, [&](char32_t c) { return c == delimiter; });
        },
        SplitBehavior::kRemoved, false);
  }
};

}  // namespace

void PreTokenizer::pre_tokenize(std::string text, bool at_start,
                                std::vector<std::string>& words) const {
  if (text.empty()) return;
  if (steps_.empty()) {
    words.push_back(std::move(text));
    return;
  }
  Pieces pieces;
  pieces.push_back({std::move(text), at_start});
  for (const PreTokenizerStep& step : steps_) std::visit(StepApplier{pieces}, step);
  for (Piece& p : pieces) {
    if (!p.text.empty()) words.push_back(std::move(p.text));
  }
}

}  // namespace sgl::tokenizer
