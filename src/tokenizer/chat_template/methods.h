// Lookup of the Python methods of str, list, tuple and dict values (s.strip(), d.items(), ...).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "tokenizer/chat_template/render_budget.h"
#include "tokenizer/chat_template/value.h"

namespace sgl::tokenizer::jinja {

// The bound method `obj.name` as a callable value; for mutators (append, pop, update, ...)
// under the immutable sandbox, the undefined that raises SecurityError when called. nullopt
// when the type has no such method.
std::optional<Value> find_method(const Value& obj, const std::string& name, bool immutable_sandbox);

// str.replace(old, new, count) (count < 0 replaces all), built under the render budget.
Result<std::string> py_replace(Interpreter& interp, const std::string& s, const std::string& old,
                               const std::string& repl, int64_t count);
// str.splitlines(keepends), each line charged to `budget` as it is split off.
Result<std::vector<std::string>> py_splitlines(RenderBudget& budget, const std::string& s,
                                               bool keepends);

}  // namespace sgl::tokenizer::jinja
