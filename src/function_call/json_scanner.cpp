// JsonScanner: a pushdown checker over the JSON grammar (RFC 8259), one byte at a time.
#include "function_call/json_scanner.h"

#include <cctype>
#include <string_view>

#include "function_call/text_scan.h"

namespace sgl::function_call {
namespace {

bool is_valid_literal(std::string_view s) {
  return s == "true" || s == "false" || s == "null" || is_json_number(s);
}

}  // namespace

JsonScanner::Step JsonScanner::value_ended() {
  if (stack_.empty()) {
    state_ = State::kDone;
    return Step::kComplete;
  }
  state_ = State::kCommaOrEnd;
  return Step::kMore;
}

JsonScanner::Step JsonScanner::start_value(char c) {
  switch (c) {
    case '{':
    case '[':
      if (stack_.size() >= kMaxJsonScanDepth) return Step::kError;
      stack_ += c;
      state_ = c == '{' ? State::kKeyOrEnd : State::kValueOrEnd;
      return Step::kMore;
    case '"':
      in_key_ = false;
      state_ = State::kString;
      return Step::kMore;
    default:
      if (c != '-' && !std::isalnum(static_cast<unsigned char>(c))) return Step::kError;
      literal_.assign(1, c);
      state_ = State::kLiteral;
      return Step::kMore;
  }
}

JsonScanner::Step JsonScanner::step(char c) {
  switch (state_) {
    case State::kValue:
      if (is_json_space(c)) return Step::kMore;
      return start_value(c);
    case State::kValueOrEnd:
      if (is_json_space(c)) return Step::kMore;
      if (c == ']') {
        stack_.pop_back();
        return value_ended();
      }
      return start_value(c);
    case State::kKeyOrEnd:
    case State::kKey:
      if (is_json_space(c)) return Step::kMore;
      if (c == '}' && state_ == State::kKeyOrEnd) {
        stack_.pop_back();
        return value_ended();
      }
      if (c != '"') return Step::kError;
      in_key_ = true;
      state_ = State::kString;
      return Step::kMore;
    case State::kColon:
      if (is_json_space(c)) return Step::kMore;
      if (c != ':') return Step::kError;
      state_ = State::kValue;
      return Step::kMore;
    case State::kCommaOrEnd:
      if (is_json_space(c)) return Step::kMore;
      if (c == ',') {
        state_ = stack_.back() == '{' ? State::kKey : State::kValue;
        return Step::kMore;
      }
      if ((c == '}' && stack_.back() == '{') || (c == ']' && stack_.back() == '[')) {
        stack_.pop_back();
        return value_ended();
      }
      return Step::kError;
    case State::kString:
      if (c == '"') {
        if (!in_key_) return value_ended();
        state_ = State::kColon;
        return Step::kMore;
      }
      if (c == '\\') state_ = State::kEscape;
      return static_cast<unsigned char>(c) < 0x20 ? Step::kError : Step::kMore;
    case State::kEscape:
      if (c == 'u') {
        hex_left_ = 4;
        state_ = State::kUnicode;
        return Step::kMore;
      }
      if (std::string_view("\"\\/bfnrt").find(c) == std::string_view::npos) return Step::kError;
      state_ = State::kString;
      return Step::kMore;
    case State::kUnicode:
      if (!std::isxdigit(static_cast<unsigned char>(c))) return Step::kError;
      if (--hex_left_ == 0) state_ = State::kString;
      return Step::kMore;
    case State::kLiteral: {
      if (is_literal_byte(c)) {
        literal_ += c;
        return literal_.size() > kMaxLiteralBytes ? Step::kError : Step::kMore;
      }
      if (!is_valid_literal(literal_)) return Step::kError;
      if (value_ended() == Step::kComplete) return Step::kCompleteBefore;
      return step(c);  // the byte after a value inside a container
    }
    case State::kDone:
      return Step::kError;
  }
  return Step::kError;
}

bool JsonScanner::complete_at_end() const {
  if (state_ == State::kDone) return true;
  return state_ == State::kLiteral && stack_.empty() && is_valid_literal(literal_);
}

JsonScanner::Step stream_arguments(JsonScanner& scanner, char c, EventSink& out) {
  const JsonScanner::Step s = scanner.step(c);
  if (s == JsonScanner::Step::kMore || s == JsonScanner::Step::kComplete) {
    out.arguments(std::string_view(&c, 1));
  }
  return s;
}

}  // namespace sgl::function_call
