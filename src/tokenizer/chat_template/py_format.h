// Python string formatting: str.format(), printf-style `%`, format specs and strftime.
#pragma once

#include <ctime>
#include <string>
#include <string_view>

#include "core/status.h"
#include "tokenizer/chat_template/value.h"

namespace sgl::tokenizer::jinja {

// Python's format(value, spec) for the common spec mini-language ([[fill]align][sign][#][0]
// [width][,][.precision][type]).
Result<std::string> format_value(const Value& v, std::string_view spec);
// str.format(*args, **kwargs): positional/automatic/named fields, `.attr`/`[key]` accessors,
// !r/!s conversions and format specs.
Result<std::string> str_format(std::string_view fmt, const CallArgs& args);
// `fmt % args`: args is a tuple (positional), a dict (%(name)s) or a single value.
Result<std::string> percent_format(std::string_view fmt, const Value& args);
// datetime.strftime (C locale); %f prints the microseconds.
std::string py_strftime(std::string_view fmt, const std::tm& tm, int microseconds);

}  // namespace sgl::tokenizer::jinja
