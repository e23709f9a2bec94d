// Error statuses of the Jinja runtime, worded like the Python exceptions Jinja2 raises.
#pragma once

#include <string>

#include "core/status.h"
#include "tokenizer/chat_template/value.h"

namespace sgl::tokenizer::jinja {

// "TypeError: <message>" etc. (kInvalidArgument: the template or its inputs are at fault).
Status type_error(const std::string& message);
Status value_error(const std::string& message);
Status runtime_error(const std::string& message);           // TemplateRuntimeError
Status filter_argument_error(const std::string& message);   // FilterArgumentError
Status python_assertion_error(const std::string& message);  // AssertionError
// raise_exception(): the template's own message, unprefixed.
Status template_error(const std::string& message);
// Limits (output size, work, stack, recursion, iterations, cancellation, deadline):
// kResourceExhausted, unprefixed (they are ours, not Jinja's).
Status limit_error(const std::string& message);
// A string or collection of `bytes` would exceed the output limit (RenderOptions::
// max_output_bytes, which also bounds every single value).
Status output_limit_error(size_t limit, size_t bytes);

// The error an undefined value raises when it is used (its stored message).
Status undefined_error(const Value& undefined);

// Undefined values carrying Jinja's messages.
Value undefined_name(const std::string& name);  // 'x' is undefined
Value undefined_attribute(const Value& obj,
                          const std::string& attr);           // 'dict object' has no attribute 'x'
Value undefined_element(const Value& obj, const Value& key);  // list object has no element 3
Value undefined_hint(const std::string& hint);                // UndefinedError: <hint>
// Sandbox: accessing a mutating method of a list/dict.
Value unsafe_attribute(const Value& obj, const std::string& attr);

}  // namespace sgl::tokenizer::jinja
