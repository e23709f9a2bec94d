// Python-style printing of values: str(), repr() and float repr.
#pragma once

#include <string>
#include <string_view>

#include "tokenizer/chat_template/value.h"

namespace sgl::tokenizer::jinja {

// Python's repr(float): shortest round-trip digits, e.g. 1.0, 0.1, 1e+16, 1e-05, inf, nan.
std::string float_repr(double d);
// Python's repr(str): quotes and escapes as CPython does.
std::string string_repr(std::string_view s);
// markupsafe.escape: & < > " ' as &amp; &lt; &gt; &#34; &#39;.
std::string html_escape(std::string_view s);
// Python's repr(value) ("Undefined" for undefined).
std::string py_repr(const Value& v);
// Python's str(value) as Jinja prints it: undefined prints as the empty string.
std::string py_str(const Value& v);

}  // namespace sgl::tokenizer::jinja
