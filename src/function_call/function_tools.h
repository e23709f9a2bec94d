// A request's function tools (OpenAI's `tools`), read and checked: each a function with a name
// and a JSON Schema object for its parameters. The schema is compiled only where a grammar holds
// the calls to it (function_call/tool_constraint.h), as SGLang compiles it only then: a schema
// the grammar engine does not support is still shown to the template and parsed against.
#pragma once

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace sgl::function_call {

struct FunctionTool {
  std::string name;
  std::string parameters_json;  // the parameters' JSON Schema; empty: none given
  bool strict = false;          // calls must follow the schema, under tool_choice auto too
};

inline constexpr size_t kMaxFunctionTools = 512;

// The names of a request's functions (what a parsed call may name).
using ToolNames = std::vector<std::string>;
std::shared_ptr<const ToolNames> tool_names(std::span<const FunctionTool> tools);
// Whether `names` (null: any) holds `name`.
bool names_allow(const ToolNames* names, std::string_view name);

// `tools_json`: a JSON array of {"type": "function", "function": {"name", "description",
// "parameters", "strict"}} (the chat format) or {"type": "function", "name", "parameters", ...}
// (the Responses format); `strict` true, false or null (SGLang's default, false). InvalidArgument
// naming the tool (tools[i]) for a missing or malformed name, a non-boolean strict, a duplicate
// name, a tool type other than function, or parameters that are not a JSON object.
Result<std::vector<FunctionTool>> read_function_tools(std::string_view tools_json);

}  // namespace sgl::function_call
