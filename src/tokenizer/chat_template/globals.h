// Global functions visible to every template: range, dict, namespace, cycler, joiner and
// transformers' raise_exception / strftime_now.
#pragma once

#include <string>

#include "tokenizer/chat_template/value.h"

namespace sgl::tokenizer::jinja {

// nullptr when there is no global of that name. Template variables shadow globals.
const Value* find_global(const std::string& name);

}  // namespace sgl::tokenizer::jinja
