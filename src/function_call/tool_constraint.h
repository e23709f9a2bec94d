// The grammar that forces a model's output to be valid tool calls in a parser's format: used
// for tool_choice "required" (any of the tools) and a named function. Each call's arguments
// follow the function's parameter schema (compiled by the grammar engine's JSON Schema path and
// embedded); with parallel_tool_calls, one or more calls, else exactly one.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "function_call/function_tools.h"

namespace sgl::function_call {

struct ToolConstraint {
  std::span<const FunctionTool> tools;
  std::string_view function_name;  // a named tool_choice; empty: any of `tools` ("required")
  std::string_view parser;         // the --tool-call-parser name
  bool parallel_tool_calls = true;
};

// EBNF source text (root rule `root`) for grammar::GrammarCompiler (GrammarKind::kEbnf).
// InvalidArgument: no tools, a function_name not among them, a parameter schema the engine
// cannot compile. Unimplemented: a format whose calls are not JSON (pythonic).
Result<std::string> tool_call_grammar(const ToolConstraint& constraint);

}  // namespace sgl::function_call
