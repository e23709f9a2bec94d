// Binding call arguments to parameters.
#include "tokenizer/chat_template/call_args.h"

#include <string>

#include "tokenizer/chat_template/errors.h"

namespace sgl::tokenizer::jinja {

Result<std::vector<Value>> bind_args(std::string_view function, const CallArgs& args,
                                     std::initializer_list<Param> params) {
  std::string fn(function);
  if (args.positional.size() > params.size()) {
    return type_error(fn + "() takes at most " + std::to_string(params.size()) + " arguments (" +
                      std::to_string(args.positional.size()) + " given)");
  }
  std::vector<Value> out;
  std::vector<bool> given(params.size(), false);
  out.reserve(params.size());
  size_t i = 0;
  for (const Param& p : params) {
    if (i < args.positional.size()) {
      out.push_back(args.positional[i]);
      given[i] = true;
    } else {
      out.push_back(p.default_value);
    }
    ++i;
  }
  for (const auto& [name, value] : args.keyword) {
    size_t k = 0;
    bool found = false;
    for (const Param& p : params) {
      if (name == p.name) {
        if (given[k]) return type_error(fn + "() got multiple values for argument '" + name + "'");
        out[k] = value;
        given[k] = true;
        found = true;
        break;
      }
      ++k;
    }
    if (!found) return type_error(fn + "() got an unexpected keyword argument '" + name + "'");
  }
  size_t k = 0;
  for (const Param& p : params) {
    if (p.required && !given[k]) {
      return type_error(fn + "() missing required argument '" + std::string(p.name) + "'");
    }
    ++k;
  }
  return out;
}

Result<int64_t> int_arg(std::string_view function, const Value& v) {
  if (v.is_integral()) return v.as_int();
  return type_error("'" + type_name(v) + "' object cannot be interpreted as an integer");
}

}  // namespace sgl::tokenizer::jinja
