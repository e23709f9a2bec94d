// JSON string literals as JSON and Python's json.dumps write them: the escapes every JSON writer
// here shares (the chat templates' tojson, the profiler's traces).
#pragma once

#include <string>
#include <string_view>

namespace sgl {

// Appends the escape of `c` when JSON needs one ('"', '\\', and the controls below 0x20, with
// the short forms \n \r \t \b \f) and returns true; false, with nothing appended, otherwise.
bool append_json_escape(std::string& out, char32_t c);

// `s` as a JSON string literal: quoted, escaped, its other bytes (UTF-8 included) as they are.
void append_json_string(std::string& out, std::string_view s);

}  // namespace sgl
