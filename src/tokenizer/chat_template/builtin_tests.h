// Jinja tests (`x is defined`, `x is divisibleby 3`, ...).
#pragma once

#include <string>

#include "core/status.h"
#include "tokenizer/chat_template/value.h"

namespace sgl::tokenizer::jinja {

using TestFn = Result<bool> (*)(Interpreter& interp, const Value& value, const CallArgs& args);

// nullptr when there is no test of that name.
TestFn find_test(const std::string& name);

}  // namespace sgl::tokenizer::jinja
