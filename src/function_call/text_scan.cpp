// MarkerScanner, TrimmedText, LiteralMatch.
#include "function_call/text_scan.h"

#include <cctype>

namespace sgl::function_call {

bool MarkerScanner::is_marker_prefix(std::string_view s) const {
  for (const std::string& m : markers_) {
    if (m.size() >= s.size() && std::string_view(m).substr(0, s.size()) == s) return true;
  }
  return false;
}

int MarkerScanner::step(char c, std::string& text) {
  pending_ += c;
  for (size_t i = 0; i < markers_.size(); ++i) {
    if (pending_ == markers_[i]) {
      pending_.clear();
      return static_cast<int>(i);
    }
  }
  // Keep the longest suffix that may still start a marker; the rest is text.
  size_t keep_from = 0;
  while (keep_from < pending_.size() &&
         !is_marker_prefix(std::string_view(pending_).substr(keep_from))) {
    ++keep_from;
  }
  text.append(pending_, 0, keep_from);
  pending_.erase(0, keep_from);
  return -1;
}

bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool is_literal_byte(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.';
}

bool is_json_number(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i - from;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (i < s.size() && s[i] == '0') {
    ++i;
  } else if (digits() == 0) {
    return false;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

void TrimmedText::write(std::string_view text, std::string& out) {
  for (char c : text) {
    if (is_json_space(c)) {
      if (!skip_leading_) held_ += c;
      continue;
    }
    if (skip_leading_) {
      if (wrote_) out += gap_;
      skip_leading_ = false;
    } else {
      out += held_;
    }
    held_.clear();
    gap_.clear();
    out += c;
    wrote_ = true;
  }
}

LiteralMatch::Step LiteralMatch::step(char c) {
  if (pos_ >= literal_.size() || literal_[pos_] != c) return Step::kMismatch;
  return ++pos_ == literal_.size() ? Step::kMatched : Step::kMore;
}

int LiteralChoice::step(char c) {
  read_ += c;
  bool prefix = false;
  for (size_t i = 0; i < literals_.size(); ++i) {
    if (literals_[i] == read_) return static_cast<int>(i);
    prefix = prefix || literals_[i].starts_with(read_);
  }
  return prefix ? kMore : kMismatch;
}

}  // namespace sgl::function_call
