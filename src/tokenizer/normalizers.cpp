// Normalizer steps, each mirroring the HF tokenizers normalizer of the same name.
#include "tokenizer/normalizers.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/unicode.h"

namespace sgl::tokenizer {
namespace {

std::string strip_accents(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t begin = pos;
    if (!unicode::is_combining_mark(unicode::decode_utf8(s, pos))) {
      out.append(s.substr(begin, pos - begin));
    }
  }
  return out;
}

struct StepApplier {
  std::string& text;

  void operator()(const normalizer::Unicode& step) const {
    switch (step.form) {
      case normalizer::UnicodeForm::kNfc:
        text = unicode::nfc(text);
        break;
      case normalizer::UnicodeForm::kNfd:
        text = unicode::nfd(text);
        break;
      case normalizer::UnicodeForm::kNfkc:
        text = unicode::nfkc(text);
        break;
      case normalizer::UnicodeForm::kNfkd:
        text = unicode::nfkd(text);
        break;
    }
  }
  void operator()(const normalizer::Lowercase&) const { text = unicode::to_lowercase(text); }
  void operator()(const normalizer::ByteLevel&) const {
    std::string mapped;
    ByteLevelAlphabet::get().encode(text, mapped);
    text = std::move(mapped);
  }
  void operator()(const normalizer::StripAccents&) const { text = strip_accents(text); }
  void operator()(const normalizer::Strip& step) const {
    const size_t end = step.right ? unicode::trailing_whitespace_begin(text) : text.size();
    text.resize(end);
    if (step.left) text.erase(0, unicode::leading_whitespace_length(text));
  }
  void operator()(const normalizer::Prepend& step) const {
    // NOTE: HF prepends only to non-empty strings.
    if (text.empty()) return;
    std::string prepended;  // sized exactly: an insert would double the capacity
    prepended.reserve(step.prefix.size() + text.size());
    prepended.append(step.prefix).append(text);
    text = std::move(prepended);
  }
  void operator()(const normalizer::ReplaceString& step) const {
    if (!step.pattern.empty()) text = replace_all(text, step.pattern, step.content);
  }
  void operator()(const normalizer::ReplaceRegex& step) const {
    text = replace_all(text, step.regex, step.content);
  }
};

}  // namespace

void Normalizer::normalize(std::string& text) const {
  for (const NormalizerStep& step : steps_) std::visit(StepApplier{text}, step);
}

std::string replace_all(std::string_view text, std::string_view pattern, std::string_view content) {
  size_t count = 0;
  for (size_t at = text.find(pattern); at != std::string_view::npos;
       at = text.find(pattern, at + pattern.size())) {
    ++count;
  }
  std::string out;
  out.reserve(text.size() - count * pattern.size() + count * content.size());
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(pattern, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(content);
    pos = hit + pattern.size();
  }
  out.append(text.substr(pos));
  return out;
}

std::string replace_all(std::string_view text, const Regex& regex, std::string_view content) {
  Regex::Matches matches(regex, text);
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  for (ByteRange m; matches.next(m);) {
    out.append(text.substr(pos, m.begin - pos));
    out.append(content);
    pos = m.end;
  }
  out.append(text.substr(pos));
  return out;
}

}  // namespace sgl::tokenizer
