// Internal: method function tables shared by methods.cpp and str_methods.cpp.
#pragma once

#include <string>
#include <unordered_map>

#include "core/status.h"
#include "tokenizer/chat_template/value.h"

namespace sgl::tokenizer::jinja {

using MethodFn = Result<Value> (*)(Interpreter& interp, const Value& self, const CallArgs& args);
using MethodTable = std::unordered_map<std::string, MethodFn>;

// Methods of str values (defined in str_methods.cpp).
const MethodTable& str_method_table();

}  // namespace sgl::tokenizer::jinja
