// Python string formatting: str.format(), printf-style `%`, format specs and strftime.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>

#include "core/status.h"
#include "tokenizer/chat_template/render_budget.h"
#include "tokenizer/chat_template/value.h"

namespace sgl::tokenizer::jinja {

// Python's format(value, spec) for the common spec mini-language ([[fill]align][sign][#][0]
// [width][,][.precision][type]). The repr of a container stops past max_bytes (py_repr).
Result<std::string> format_value(const Value& v, std::string_view spec,
                                 size_t max_bytes = SIZE_MAX);
// str.format(*args, **kwargs): positional/automatic/named fields, `.attr`/`[key]` accessors,
// !r/!s conversions and format specs. The result is built under `budget`.
Result<std::string> str_format(std::string_view fmt, const CallArgs& args, RenderBudget& budget);
// `fmt % args`: args is a tuple (positional), a dict (%(name)s) or a single value. The result
// is built under `budget`.
Result<std::string> percent_format(std::string_view fmt, const Value& args, RenderBudget& budget);
// datetime.strftime (C locale); %f prints the microseconds. Stops once the text is longer
// than max_bytes, for the caller's size check to fail.
std::string py_strftime(std::string_view fmt, const std::tm& tm, int microseconds,
                        size_t max_bytes = SIZE_MAX);

}  // namespace sgl::tokenizer::jinja
