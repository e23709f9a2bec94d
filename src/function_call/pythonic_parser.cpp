// PythonicParser.
#include "function_call/pythonic_parser.h"

#include <cctype>

namespace sgl::function_call {
namespace {

constexpr size_t kMaxNameBytes = 256;

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

void PythonicParser::text(std::string_view s, EventSink& out) {
  std::string t;
  text_.write(s, t);
  out.content(t);
}

void PythonicParser::fall_back(char c, EventSink& out) {
  state_ = State::kText;
  text(std::exchange(raw_, {}), out);
  step(c, out);
}

void PythonicParser::end_call(EventSink& out) {
  args_ += '}';
  out.begin_call(name_);
  out.arguments(args_);
  raw_.clear();
  text_.skip_leading();
  state_ = State::kAfterCall;
}

void PythonicParser::step(char c, EventSink& out) {
  if (state_ != State::kText) raw_ += c;
  switch (state_) {
    case State::kText: {
      std::string t;
      const int marker = scanner_.step(c, t);
      text(t, out);
      if (marker == 0) {
        raw_ = text_.take_held() + "[";
        state_ = State::kCallStart;
      }
      return;
    }
    case State::kCallStart:
      if (is_json_space(c)) return;
      if (!is_ident_start(c)) break;
      name_.assign(1, c);
      state_ = State::kName;
      return;
    case State::kName:
      if (is_ident(c) && name_.size() < kMaxNameBytes) {
        name_ += c;
        return;
      }
      if (c != '(') break;
      args_ = "{";
      first_arg_ = true;
      state_ = State::kArgs;
      return;
    case State::kArgs:
      if (is_json_space(c)) return;
      if (c == ')') {
        end_call(out);
        return;
      }
      if (!is_ident_start(c)) break;
      key_.assign(1, c);
      state_ = State::kKey;
      return;
    case State::kKey:
    case State::kEquals:
      if (state_ == State::kKey && is_ident(c) && key_.size() < kMaxNameBytes) {
        key_ += c;
        return;
      }
      if (is_json_space(c)) {
        state_ = State::kEquals;
        return;
      }
      if (c != '=') break;
      args_ += (first_arg_ ? "\"" : ", \"") + key_ + "\": ";
      first_arg_ = false;
      value_.reset();
      state_ = State::kValue;
      return;
    case State::kValue:
      switch (value_.step(c, args_)) {
        case PythonLiteralToJson::Step::kMore:
          return;
        case PythonLiteralToJson::Step::kComplete:
          state_ = State::kAfterValue;
          return;
        case PythonLiteralToJson::Step::kCompleteBefore:
          raw_.pop_back();  // read again below
          state_ = State::kAfterValue;
          step(c, out);
          return;
        case PythonLiteralToJson::Step::kError:
          break;
      }
      break;
    case State::kAfterValue:
      if (is_json_space(c)) return;
      if (c == ',') {
        state_ = State::kArgs;
        return;
      }
      if (c != ')') break;
      end_call(out);
      return;
    case State::kAfterCall:
      if (is_json_space(c)) return;
      raw_.clear();  // a separator, not text
      if (c == ',') {
        state_ = State::kCallStart;
        return;
      }
      state_ = State::kText;
      text_.skip_leading();
      if (c != ']') step(c, out);
      return;
  }
  raw_.pop_back();  // `c` is read again as text
  fall_back(c, out);
}

void PythonicParser::finish(EventSink& out) {
  if (state_ == State::kText) {
    text(scanner_.take_pending(), out);
    out.content(text_.take_held());
  } else if (state_ != State::kAfterCall) {
    text(raw_, out);  // an unfinished call is text
    out.content(text_.take_held());
  }
  raw_.clear();
}

}  // namespace sgl::function_call
