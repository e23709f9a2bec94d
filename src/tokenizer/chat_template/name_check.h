// Compile-time check Jinja performs after parsing: unknown filter/test names are errors unless
// they sit in conditional code (an if block or inline if), where they only fail when reached.
#pragma once

#include "core/status.h"
#include "tokenizer/chat_template/ast.h"

namespace sgl::tokenizer::jinja {

// TemplateAssertionError "No filter named 'x'." for the first unknown name in hard context.
Status check_names(const Body& body);

}  // namespace sgl::tokenizer::jinja
