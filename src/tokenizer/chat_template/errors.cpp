// Error statuses and undefined-value messages of the Jinja runtime.
#include "tokenizer/chat_template/errors.h"

#include "tokenizer/chat_template/value_format.h"

namespace sgl::tokenizer::jinja {

Status type_error(const std::string& message) { return invalid_argument("TypeError: " + message); }

Status value_error(const std::string& message) {
  return invalid_argument("ValueError: " + message);
}

Status runtime_error(const std::string& message) {
  return invalid_argument("TemplateRuntimeError: " + message);
}

Status filter_argument_error(const std::string& message) {
  return invalid_argument("FilterArgumentError: " + message);
}

Status python_assertion_error(const std::string& message) {
  return invalid_argument("AssertionError: " + message);
}

Status template_error(const std::string& message) { return invalid_argument(message); }

Status limit_error(const std::string& message) { return resource_exhausted(message); }

Status output_limit_error(size_t limit, size_t bytes) {
  return limit_error("chat template exceeded the output limit of " + std::to_string(limit) +
                     " bytes (a value of " + std::to_string(bytes) + " bytes)");
}

Status undefined_error(const Value& undefined) {
  const std::string& message = undefined.undefined_message();
  if (message.empty()) return invalid_argument("UndefinedError: value is undefined");
  return invalid_argument(message);
}

Value undefined_name(const std::string& name) {
  return Value::undefined("UndefinedError: " + string_repr(name) + " is undefined");
}

Value undefined_attribute(const Value& obj, const std::string& attr) {
  return Value::undefined("UndefinedError: " + string_repr(object_type_repr(obj)) +
                          " has no attribute " + string_repr(attr));
}

Value undefined_element(const Value& obj, const Value& key) {
  if (key.is_string()) return undefined_attribute(obj, key.as_string());
  return Value::undefined("UndefinedError: " + object_type_repr(obj) + " has no element " +
                          message_repr(key));
}

Value undefined_hint(const std::string& hint) {
  return Value::undefined("UndefinedError: " + hint);
}

Value unsafe_attribute(const Value& obj, const std::string& attr) {
  return Value::undefined("SecurityError: access to attribute " + string_repr(attr) + " of " +
                          string_repr(type_name(obj)) + " object is unsafe.");
}

}  // namespace sgl::tokenizer::jinja
