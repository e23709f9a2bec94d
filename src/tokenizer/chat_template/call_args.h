// Python-style binding of call arguments (positional + keyword) to named parameters.
#pragma once

#include <initializer_list>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/chat_template/value.h"

namespace sgl::tokenizer::jinja {

struct Param {
  const char* name;
  Value default_value;  // used when the argument is omitted and the parameter is optional
  bool required = false;
};

// Returns one value per parameter, in order. Errors mirror Python's TypeErrors
// ("f() missing required argument 'x'", "unexpected keyword argument", "too many arguments").
Result<std::vector<Value>> bind_args(std::string_view function, const CallArgs& args,
                                     std::initializer_list<Param> params);

// Integer argument check ("'x' must be an integer").
Result<int64_t> int_arg(std::string_view function, const Value& v);

}  // namespace sgl::tokenizer::jinja
