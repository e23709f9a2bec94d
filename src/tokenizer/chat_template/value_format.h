// Python-style printing of values: str(), repr() and float repr.
#pragma once

#include <cstdint>
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
// Python's repr(value) ("Undefined" for undefined). Stops early once the text is longer than
// `max_bytes`, for the caller's size check to fail: a value shared many times ([x, x] nested
// 60 deep) would otherwise print for ever.
std::string py_repr(const Value& v, size_t max_bytes = SIZE_MAX);
// py_repr for error messages: past 1000 bytes it is cut and ends in "...".
std::string message_repr(const Value& v);
// Python's str(value) as Jinja prints it: undefined prints as the empty string.
std::string py_str(const Value& v, size_t max_bytes = SIZE_MAX);

}  // namespace sgl::tokenizer::jinja
