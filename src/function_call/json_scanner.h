// An incremental JSON syntax checker for one value, byte by byte: it says when the value is
// complete (or broken) without building it, so a parser can stream the value's text as it comes.
#pragma once

#include <cstdint>
#include <string>

#include "function_call/parse_event.h"

namespace sgl::function_call {

inline constexpr size_t kMaxJsonScanDepth = 256;

class JsonScanner {
 public:
  enum class Step {
    kMore,            // the byte belongs to the value; more is needed
    kComplete,        // the byte completed the value
    kCompleteBefore,  // the value (a bare number or literal) ended before this byte, which is
                      // not part of it
    kError,           // not JSON
  };

  Step step(char c);
  // The input ended: whether the value read so far is complete (a bare number at the end).
  bool complete_at_end() const;
  void reset() { *this = JsonScanner(); }
  bool started() const { return state_ != State::kValue || !stack_.empty(); }

 private:
  enum class State : uint8_t {
    kValue,       // a value is expected
    kValueOrEnd,  // first element of an array, or ']'
    kKeyOrEnd,    // first key of an object, or '}'
    kKey,         // a key after ','
    kColon,
    kCommaOrEnd,
    kString,
    kEscape,
    kUnicode,
    kLiteral,  // a number, true, false or null
    kDone,
  };

  Step start_value(char c);
  Step value_ended();

  State state_ = State::kValue;
  std::string stack_;  // open containers: '{' or '['
  bool in_key_ = false;
  int hex_left_ = 0;
  std::string literal_;
};

// Steps `scanner` by `c`; a byte of the value (kMore, kComplete) goes to `out` as more of the
// current call's arguments.
JsonScanner::Step stream_arguments(JsonScanner& scanner, char c, EventSink& out);

}  // namespace sgl::function_call
