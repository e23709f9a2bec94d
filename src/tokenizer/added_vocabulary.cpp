// AddedVocabulary: trie matching of added tokens, mirroring HF's AddedVocabulary::find_matches.
#include "tokenizer/added_vocabulary.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace sgl::tokenizer {
namespace {

char32_t last_char(std::string_view s) {
  size_t begin = s.size() - 1;
  while (begin > 0 && (static_cast<unsigned char>(s[begin]) & 0xC0) == 0x80) --begin;
  return unicode::decode_utf8(s, begin);
}

bool ends_with_word(std::string_view s) {
  return !s.empty() && unicode::is_word_char(last_char(s));
}

bool starts_with_word(std::string_view s) {
  size_t pos = 0;
  return !s.empty() && unicode::is_word_char(unicode::decode_utf8(s, pos));
}

}  // namespace

void AddedVocabulary::Trie::insert(std::string_view key, int32_t value) {
  if (key.empty()) return;
  const auto first = static_cast<unsigned char>(key[0]);
  first_bytes_[first >> 6] |= uint64_t{1} << (first & 63);
  size_t node = 0;
  for (char ch : key) {
    const auto b = static_cast<unsigned char>(ch);
    auto& children = nodes_[node].children;
    auto it = std::lower_bound(children.begin(), children.end(), b,
                               [](const auto& child, unsigned char x) { return child.first < x; });
    if (it != children.end() && it->first == b) {
      node = static_cast<size_t>(it->second);
      continue;
    }
    const auto next = static_cast<int32_t>(nodes_.size());
    children.insert(it, {b, next});
    nodes_.emplace_back();
    node = static_cast<size_t>(next);
  }
  // NOTE: the first token registered with a content wins, as in HF's ordered matcher.
  if (nodes_[node].value < 0) nodes_[node].value = value;
}

std::pair<int32_t, size_t> AddedVocabulary::Trie::longest_match(std::string_view text,
                                                                size_t pos) const {
  std::pair<int32_t, size_t> best{-1, 0};
  size_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    const auto& children = nodes_[node].children;
    auto it = std::lower_bound(children.begin(), children.end(), b,
                               [](const auto& child, unsigned char x) { return child.first < x; });
    if (it == children.end() || it->first != b) break;
    node = static_cast<size_t>(it->second);
    if (nodes_[node].value >= 0) best = {nodes_[node].value, i + 1 - pos};
  }
  return best;
}

void AddedVocabulary::build(const std::vector<AddedToken>& tokens, const Normalizer& normalizer) {
  tokens_.clear();
  raw_ = Trie();
  normalized_ = Trie();
  // HF registers special tokens first, then the others, each in file order.
  for (int pass = 0; pass < 2; ++pass) {
    for (const AddedToken& token : tokens) {
      if (token.content.empty() || token.special != (pass == 0)) continue;
      const auto index = static_cast<int32_t>(tokens_.size());
      tokens_.push_back(token);
      if (token.normalized) {
        std::string pattern = token.content;
        normalizer.normalize(pattern);
        normalized_.insert(pattern, index);
      } else {
        raw_.insert(token.content, index);
      }
    }
  }
}

std::vector<TextSegment> AddedVocabulary::split(std::string_view text, bool normalized) const {
  std::vector<TextSegment> segments;
  if (text.empty()) return segments;
  const Trie& trie = normalized ? normalized_ : raw_;
  if (trie.empty()) {
    segments.push_back({0, text.size(), -1});
    return segments;
  }
  size_t start_offset = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    if (!trie.may_start(static_cast<unsigned char>(text[pos]))) {
      ++pos;
      continue;
    }
    const auto [index, length] = trie.longest_match(text, pos);
    if (index < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[static_cast<size_t>(index)];
    size_t start = pos;
    size_t stop = pos + length;
    pos = stop;  // matching resumes after the raw match, as the Aho-Corasick iterator does
    if (token.single_word) {
      const bool start_ok = start == 0 || !ends_with_word(text.substr(0, start));
      const bool stop_ok = stop == text.size() || !starts_with_word(text.substr(stop));
      if (!start_ok || !stop_ok) continue;
    }
    if (token.lstrip)
      start = std::max(unicode::trailing_whitespace_begin(text.substr(0, start)), start_offset);
    if (token.rstrip) stop += unicode::leading_whitespace_length(text.substr(stop));
    if (start_offset < start) segments.push_back({start_offset, start, -1});
    segments.push_back({start, stop, token.id});
    start_offset = stop;
  }
  if (start_offset < text.size()) segments.push_back({start_offset, text.size(), -1});
  return segments;
}

}  // namespace sgl::tokenizer
