// Byte-at-a-time helpers shared by the parsers: markers found in running text with a partial
// marker held back until decidable, whitespace held at markup boundaries, fixed literals.
// Every decision depends only on the bytes seen so far, never on how they were chunked.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sgl::function_call {

// Finds markers in running text. A tail that may still become a marker is held back; the
// rest is text for sure. No marker may be a prefix of another.
class MarkerScanner {
 public:
  explicit MarkerScanner(std::vector<std::string> markers) : markers_(std::move(markers)) {}

  // Feeds one byte. Returns the index of the marker it completes (the held tail is then
  // cleared), else -1; text that can no longer start a marker is appended to `text`.
  int step(char c, std::string& text);
  // The held tail, given up (end of input, or a state change).
  std::string take_pending() { return std::exchange(pending_, {}); }
  bool has_pending() const { return !pending_.empty(); }

 private:
  bool is_marker_prefix(std::string_view s) const;

  std::vector<std::string> markers_;
  std::string pending_;
};

// Text with whitespace trimmed at markup boundaries: whitespace is held until other text
// follows. take_held() gives it to markup that starts there; after skip_leading() (the markup
// ended) whitespace is dropped, and the next text is joined to earlier text by the whitespace
// the markup took (so "a <call> b" reads "a b", and "a\n<call>\n" reads "a").
class TrimmedText {
 public:
  void write(std::string_view text, std::string& out);
  void skip_leading() {
    skip_leading_ = true;
    held_.clear();
  }
  std::string take_held() {
    // Markup right after markup (two calls in a row) keeps the gap the first one took.
    if (!skip_leading_) gap_ = held_;
    return std::exchange(held_, {});
  }

 private:
  std::string held_;
  std::string gap_;
  bool skip_leading_ = false;
  bool wrote_ = false;
};

bool is_json_space(char c);

// Scalars written without quotes (JSON's true / false / null and numbers; Python's too).
constexpr size_t kMaxLiteralBytes = 512;  // a longer one is an error, not a number
// A byte that may continue such a literal: letters, digits, '-', '+', '.'.
bool is_literal_byte(char c);
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?: a JSON number as written.
bool is_json_number(std::string_view s);

// A fixed literal matched byte by byte.
class LiteralMatch {
 public:
  enum class Step { kMore, kMatched, kMismatch };

  explicit LiteralMatch(std::string_view literal = {}) : literal_(literal) {}
  void reset(std::string_view literal) {
    literal_ = literal;
    pos_ = 0;
  }
  Step step(char c);
  // What matched so far.
  std::string_view matched() const { return literal_.substr(0, pos_); }

 private:
  std::string_view literal_;
  size_t pos_ = 0;
};

// One of a few literals, matched byte by byte.
class LiteralChoice {
 public:
  static constexpr int kMore = -1;
  static constexpr int kMismatch = -2;

  explicit LiteralChoice(std::vector<std::string_view> literals = {})
      : literals_(std::move(literals)) {}
  // The index of the literal `c` completes, kMore, or kMismatch (no literal starts so).
  int step(char c);
  // The bytes read (on a mismatch, the failing byte included).
  const std::string& read() const { return read_; }
  void reset() { read_.clear(); }

 private:
  std::vector<std::string_view> literals_;
  std::string read_;
};

}  // namespace sgl::function_call
