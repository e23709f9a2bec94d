// Python literals (str, int, float, True / False / None, list, tuple, dict with string keys)
// converted to JSON text byte by byte, as json.dumps writes them (", " and ": " separators,
// non-ASCII characters as themselves): the values of pythonic tool calls.
#pragma once

#include <cstdint>
#include <string>

namespace sgl::function_call {

class PythonLiteralToJson {
 public:
  enum class Step { kMore, kComplete, kCompleteBefore, kError };  // as JsonScanner::Step

  // Appends the JSON text that `c` completes to `json`.
  Step step(char c, std::string& json);
  void reset() { *this = PythonLiteralToJson(); }

 private:
  enum class State : uint8_t {
    kValue,
    kValueOrClose,  // a list / tuple's next element (or its end)
    kKeyOrClose,    // a dict's next key (or its end)
    kColon,
    kCommaOrClose,
    kString,
    kEscape,
    kHex,  // \xHH or \uHHHH
    kLiteral,
    kDone,
  };

  Step start_value(char c, std::string& json);
  Step value_ended();
  Step close(char c, std::string& json);

  State state_ = State::kValue;
  std::string stack_;  // '[' (list), '(' (tuple), '{' (dict)
  bool key_ = false;   // the string being read is a dict key
  bool need_sep_ = false;
  char quote_ = 0;
  int hex_left_ = 0;
  std::string hex_;
  std::string literal_;
};

}  // namespace sgl::function_call
