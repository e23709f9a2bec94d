// The pythonic tool-call format (Llama 3.2 / 4 style): a Python list of calls with keyword
// arguments, `[get_weather(city="Paris", days=3), get_time()]`, anywhere in the text. Each call
// is announced once its closing ')' is read, with its arguments converted to a JSON object; a
// list that turns out not to be calls (`[1]`, `[see below]`, positional arguments) is content.
// Llama 4's <|python_start|> / <|python_end|> around the list are removed, as in SGLang.
#pragma once

#include <string>

#include "function_call/python_literal.h"
#include "function_call/stream_parser.h"
#include "function_call/text_scan.h"

namespace sgl::function_call {

class PythonicParser final : public ByteParser {
 public:
  void finish(EventSink& out) override;

 private:
  enum class State : uint8_t {
    kText,
    kCallStart,  // after '[' or ',': a function name expected
    kName,
    kArgs,  // after '(' or ',': a keyword or ')'
    kKey,
    kEquals,  // whitespace after a keyword, before '='
    kValue,
    kAfterValue,
    kAfterCall,  // after ')': ',' or ']'
  };

  void step(char c, EventSink& out) override;
  void text(std::string_view s, EventSink& out);
  // Not a call: the markup since the last finished call is content; `c` is read again as text.
  void fall_back(char c, EventSink& out);
  void end_call(EventSink& out);

  // '[' opens a list of calls (0); Llama 4's list markers (1, 2) are dropped.
  MarkerScanner scanner_{{"[", "<|python_start|>", "<|python_end|>"}};
  TrimmedText text_;
  State state_ = State::kText;
  PythonLiteralToJson value_;
  std::string raw_;
  std::string name_;
  std::string key_;
  std::string args_;
  bool first_arg_ = true;
};

}  // namespace sgl::function_call
