// Reads one call object, {"name": "f", "arguments": {...}} ("parameters" too, keys in any
// order, other keys skipped), byte by byte: the call begins once its name is read, and the
// arguments' JSON text streams as it comes.
#pragma once

#include <memory>
#include <string>

#include "function_call/function_tools.h"
#include "function_call/json_scanner.h"
#include "function_call/parse_event.h"

namespace sgl::function_call {

class JsonCallReader {
 public:
  enum class Step {
    kMore,
    kDone,   // the byte was the object's closing '}'
    kError,  // not a call object: the byte is not part of it
  };

  // `names`: the functions a call may name (another name is kError before the call begins);
  // null: any.
  explicit JsonCallReader(std::shared_ptr<const ToolNames> names = nullptr)
      : names_(std::move(names)) {}

  // Bytes from the object's '{' on.
  Step step(char c, EventSink& out);
  // Whether the call was announced (out.begin_call): from then on it is a call, whatever follows.
  bool begun() const { return begun_; }
  // Whether the last kError was a well-formed name the call may not name.
  bool refused_name() const { return refused_name_; }
  // Whether a call may name `name`.
  bool allows(std::string_view name) const { return names_allow(names_.get(), name); }
  void reset() { *this = JsonCallReader(std::move(names_)); }

 private:
  enum class State : uint8_t { kOpen, kKeyOrEnd, kKey, kKeyText, kColon, kValue, kCommaOrEnd };
  enum class Field : uint8_t { kName, kArguments, kOther };

  Step start_value(char c, EventSink& out);
  Step value_byte(char c, EventSink& out);
  Step value_done(EventSink& out);

  std::shared_ptr<const ToolNames> names_;
  State state_ = State::kOpen;
  Field field_ = Field::kOther;
  bool in_value_ = false;
  bool key_escape_ = false;
  JsonScanner value_;
  std::string key_;
  std::string name_json_;  // the name's JSON string while it is read
  std::string name_;
  std::string args_before_name_;
  bool have_name_ = false;
  bool have_args_ = false;
  bool begun_ = false;
  bool refused_name_ = false;
};

}  // namespace sgl::function_call
