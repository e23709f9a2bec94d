// PythonLiteralToJson.
#include "function_call/python_literal.h"

#include <cctype>
#include <cstdio>
#include <string_view>

#include "function_call/text_scan.h"

namespace sgl::function_call {
namespace {

constexpr size_t kMaxDepth = 128;

void append_control(char c, std::string& json) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
  json += buf;
}

}  // namespace

PythonLiteralToJson::Step PythonLiteralToJson::value_ended() {
  if (stack_.empty()) {
    state_ = State::kDone;
    return Step::kComplete;
  }
  state_ = State::kCommaOrClose;
  return Step::kMore;
}

PythonLiteralToJson::Step PythonLiteralToJson::close(char c, std::string& json) {
  const char open = stack_.back();
  if ((c == ']' && open != '[') || (c == ')' && open != '(') || (c == '}' && open != '{')) {
    return Step::kError;
  }
  stack_.pop_back();
  json += open == '{' ? '}' : ']';
  need_sep_ = false;
  return value_ended();
}

PythonLiteralToJson::Step PythonLiteralToJson::start_value(char c, std::string& json) {
  if (need_sep_) {
    json += ", ";
    need_sep_ = false;
  }
  switch (c) {
    case '[':
    case '(':
    case '{':
      if (stack_.size() >= kMaxDepth) return Step::kError;
      stack_ += c;
      json += c == '{' ? '{' : '[';
      state_ = c == '{' ? State::kKeyOrClose : State::kValueOrClose;
      return Step::kMore;
    case '"':
    case '\'':
      quote_ = c;
      json += '"';
      state_ = State::kString;
      return Step::kMore;
    default:
      if (c != '-' && !std::isalnum(static_cast<unsigned char>(c))) return Step::kError;
      literal_.assign(1, c);
      state_ = State::kLiteral;
      return Step::kMore;
  }
}

PythonLiteralToJson::Step PythonLiteralToJson::step(char c, std::string& json) {
  switch (state_) {
    case State::kValue:
      if (is_json_space(c)) return Step::kMore;
      key_ = false;
      return start_value(c, json);
    case State::kValueOrClose:
      if (is_json_space(c)) return Step::kMore;
      if (c == ']' || c == ')') return close(c, json);
      key_ = false;
      return start_value(c, json);
    case State::kKeyOrClose:
      if (is_json_space(c)) return Step::kMore;
      if (c == '}') return close(c, json);
      if (c != '"' && c != '\'') return Step::kError;  // JSON keys are strings
      key_ = true;
      return start_value(c, json);
    case State::kColon:
      if (is_json_space(c)) return Step::kMore;
      if (c != ':') return Step::kError;
      json += ": ";
      state_ = State::kValue;
      return Step::kMore;
    case State::kCommaOrClose:
      if (is_json_space(c)) return Step::kMore;
      if (c == ',') {
        need_sep_ = true;  // written when another element follows (Python allows `[1, 2,]`)
        state_ = stack_.back() == '{' ? State::kKeyOrClose : State::kValueOrClose;
        return Step::kMore;
      }
      if (c == ']' || c == ')' || c == '}') return close(c, json);
      return Step::kError;
    case State::kString:
      if (c == quote_) {
        json += '"';
        if (!key_) return value_ended();
        key_ = false;
        state_ = State::kColon;
        return Step::kMore;
      }
      if (c == '\\') {
        state_ = State::kEscape;
      } else if (c == '"') {
        json += "\\\"";
      } else if (c == '\n') {
        return Step::kError;  // unterminated (no triple quotes)
      } else if (static_cast<unsigned char>(c) < 0x20) {
        append_control(c, json);
      } else {
        json += c;
      }
      return Step::kMore;
    case State::kEscape:
      state_ = State::kString;
      switch (c) {
        case '\'':
          json += '\'';
          return Step::kMore;
        case '"':
        case '\\':
        case 'n':
        case 't':
        case 'r':
        case 'b':
        case 'f':
          json += '\\';
          json += c;
          return Step::kMore;
        case 'x':
        case 'u':
          hex_left_ = c == 'x' ? 2 : 4;
          hex_.clear();
          state_ = State::kHex;
          return Step::kMore;
        default:
          return Step::kError;
      }
    case State::kHex:
      if (!std::isxdigit(static_cast<unsigned char>(c))) return Step::kError;
      hex_ += c;
      if (--hex_left_ == 0) {
        json += "\\u" + std::string(4 - hex_.size(), '0') + hex_;
        state_ = State::kString;
      }
      return Step::kMore;
    case State::kLiteral: {
      if (is_literal_byte(c) || c == '_') {
        literal_ += c;
        return literal_.size() > kMaxLiteralBytes ? Step::kError : Step::kMore;
      }
      if (literal_ == "True") {
        json += "true";
      } else if (literal_ == "False") {
        json += "false";
      } else if (literal_ == "None") {
        json += "null";
      } else if (is_json_number(literal_)) {  // 1., .5, 1_000, 0x10: refused, not rewritten
        json += literal_;
      } else {
        return Step::kError;
      }
      if (value_ended() == Step::kComplete) return Step::kCompleteBefore;
      return step(c, json);
    }
    case State::kDone:
      return Step::kError;
  }
  return Step::kError;
}

}  // namespace sgl::function_call
