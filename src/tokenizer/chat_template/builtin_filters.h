// Jinja filters (`x | length`, `x | tojson(indent=2)`, ...): the registry.
#pragma once

#include <string>

#include "core/status.h"
#include "tokenizer/chat_template/value.h"

namespace sgl::tokenizer::jinja {

using FilterFn = Result<Value> (*)(Interpreter& interp, const Value& input, const CallArgs& args);

// nullptr when there is no filter of that name.
FilterFn find_filter(const std::string& name);

}  // namespace sgl::tokenizer::jinja
