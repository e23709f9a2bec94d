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

char32_t first_char(std::string_view s) {
  size_t pos = 0;
  return s.empty() ? 0 : unicode::decode_utf8(s, pos);
}

// Runs the steps depth-first: a step cuts its piece into ranges (views, no copies) and hands each
// to the next step before cutting the next, so no step ever holds all the pieces.
class StepWalk {
 public:
  StepWalk(const std::vector<PreTokenizerStep>& steps, const WordSink& sink)
      : steps_(steps), sink_(sink), buffers_(2 * steps.size()) {}

  // Applies steps[depth...] to `text`, a piece that begins the caller's input when `at_start`.
  void run(size_t depth, std::string_view text, bool at_start) {
    if (depth == steps_.size()) {
      if (!text.empty()) sink_(text);
      return;
    }
    std::visit([&](const auto& step) { apply(step, depth, text, at_start); }, steps_[depth]);
  }

 private:
  // Text a step rewrites lives in its depth's buffers while the deeper steps see it.
  std::string& buffer(size_t depth, size_t which) { return buffers_[2 * depth + which]; }

  // Passes each range of `text` that the split keeps to then(piece, piece_at_start).
  template <typename NextMatch, typename Then>
  void split(std::string_view text, bool at_start, NextMatch&& next_match, SplitBehavior behavior,
             bool invert, Then&& then) {
    split_ranges(text.size(), next_match, behavior, invert, [&](const ByteRange& r) {
      then(text.substr(r.begin, r.end - r.begin), at_start && r.begin == 0);
    });
  }
  // Splits and hands each kept range to the next step.
  template <typename NextMatch>
  void split_to_next(size_t depth, std::string_view text, bool at_start, NextMatch&& next_match,
                     SplitBehavior behavior, bool invert) {
    split(text, at_start, next_match, behavior, invert,
          [&](std::string_view piece, bool piece_at_start) {
            run(depth + 1, piece, piece_at_start);
          });
  }

  void apply(const pre_tokenizer::ByteLevel& step, size_t depth, std::string_view text,
             bool at_start) {
    if (step.add_prefix_space && (text.empty() || text[0] != ' ')) {
      std::string& spaced = buffer(depth, 0);
      spaced.assign(1, ' ');
      spaced.append(text);
      text = spaced;
    }
    auto map_to_next = [&](std::string_view piece, bool piece_at_start) {
      std::string& mapped = buffer(depth, 1);
      mapped.clear();
      ByteLevelAlphabet::get().encode(piece, mapped);
      run(depth + 1, mapped, piece_at_start);
    };
    if (!step.use_regex) return map_to_next(text, at_start);
    Regex::Matches matches(gpt2_regex(), text);
    split(
        text, at_start, [&](ByteRange& m) { return matches.next(m); }, SplitBehavior::kIsolated,
        false, map_to_next);
  }
  void apply(const pre_tokenizer::SplitRegex& step, size_t depth, std::string_view text,
             bool at_start) {
    Regex::Matches matches(step.regex, text);
    split_to_next(
        depth, text, at_start, [&](ByteRange& m) { return matches.next(m); }, step.behavior,
        step.invert);
  }
  void apply(const pre_tokenizer::SplitString& step, size_t depth, std::string_view text,
             bool at_start) {
    split_to_next(depth, text, at_start, literal_matches(text, step.pattern), step.behavior,
                  step.invert);
  }
  void apply(const pre_tokenizer::Metaspace& step, size_t depth, std::string_view text,
             bool at_start) {
    if (text.find(' ') != std::string_view::npos) {
      std::string& replaced = buffer(depth, 0);
      replaced = replace_all(text, " ", step.replacement);
      text = replaced;
    }
    const bool prepend =
        !text.starts_with(step.replacement) &&
        (step.prepend_scheme == pre_tokenizer::PrependScheme::kAlways ||
         (step.prepend_scheme == pre_tokenizer::PrependScheme::kFirst && at_start));
    if (prepend) {
      std::string& prepended = buffer(depth, 1);
      prepended.assign(step.replacement);
      prepended.append(text);
      text = prepended;
    }
    if (!step.split) return run(depth + 1, text, at_start);
    const char32_t replacement = first_char(step.replacement);
    split_to_next(depth, text, at_start,
                  char_matches(text, [replacement](char32_t c) { return c == replacement; }),
                  SplitBehavior::kMergedWithNext, false);
  }
  void apply(const pre_tokenizer::Digits& step, size_t depth, std::string_view text,
             bool at_start) {
    split_to_next(depth, text, at_start, char_matches(text, unicode::is_numeric),
                  step.individual_digits ? SplitBehavior::kIsolated : SplitBehavior::kContiguous,
                  false);
  }
  void apply(const pre_tokenizer::Punctuation& step, size_t depth, std::string_view text,
             bool at_start) {
    split_to_next(depth, text, at_start, char_matches(text, unicode::is_punctuation), step.behavior,
                  false);
  }
  // Runs of word characters and runs of other non-space characters; whitespace is dropped.
  void apply(const pre_tokenizer::Whitespace&, size_t depth, std::string_view text, bool at_start) {
    enum class Kind { kSpace, kWord, kOther };
    size_t pos = 0;
    size_t run_begin = 0;
    Kind run_kind = Kind::kSpace;
    auto flush = [&](size_t end) {
      if (run_kind != Kind::kSpace && end > run_begin) {
        run(depth + 1, text.substr(run_begin, end - run_begin), at_start && run_begin == 0);
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
  void apply(const pre_tokenizer::WhitespaceSplit&, size_t depth, std::string_view text,
             bool at_start) {
    split_to_next(depth, text, at_start, char_matches(text, unicode::is_whitespace),
                  SplitBehavior::kRemoved, false);
  }
  // Whitespace split, then punctuation isolated.
  void apply(const pre_tokenizer::Bert&, size_t depth, std::string_view text, bool at_start) {
    split(text, at_start, char_matches(text, unicode::is_whitespace), SplitBehavior::kRemoved,
          false, [&](std::string_view word, bool word_at_start) {
            split_to_next(depth, word, word_at_start, char_matches(word, unicode::is_punctuation),
                          SplitBehavior::kIsolated, false);
          });
  }
  void apply(const pre_tokenizer::CharDelimiter& step, size_t depth, std::string_view text,
             bool at_start) {
    const char32_t delimiter = step.delimiter;
    split_to_next(depth, text, at_start,
                  char_matches(text, [delimiter](char32_t c) { return c == delimiter; }),
                  SplitBehavior::kRemoved, false);
  }

  const std::vector<PreTokenizerStep>& steps_;
  const WordSink& sink_;
  std::vector<std::string> buffers_;
};

}  // namespace

void PreTokenizer::pre_tokenize(std::string_view text, bool at_start, const WordSink& sink) const {
  if (text.empty()) return;
  StepWalk(steps_, sink).run(0, text, at_start);
}

}  // namespace sgl::tokenizer
