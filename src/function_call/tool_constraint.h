// The grammars that hold a model's output to valid tool calls in a parser's format. For
// tool_choice "required" (any of the tools) and a named function: only calls, each call's
// arguments following the function's parameter schema (compiled by the grammar engine's JSON
// Schema path and embedded); with parallel_tool_calls, one or more calls, else exactly one. For
// tool_choice "auto" with strict tools (as SGLang): free text, in which the format's marker
// opens calls that must be well formed, strict tools' arguments following their schemas.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "function_call/function_tools.h"
#include "function_call/think_parser.h"

namespace sgl::function_call {

// Where an output's <think>...</think> reasoning may be: calls are not held inside it.
enum class ThinkingStart : uint8_t {
  kNone,     // no reasoning is separated
  kMayOpen,  // the output may open with <think> (qwen3)
  kOpen,     // the output starts inside the reasoning (the prompt opened it)
};

struct ToolConstraint {
  std::span<const FunctionTool> tools;
  std::string_view function_name;  // a named tool_choice; empty: any of `tools` ("required")
  std::string_view parser;         // the --tool-call-parser name
  bool parallel_tool_calls = true;
  ThinkingStart thinking = ThinkingStart::kNone;  // auto_tool_call_grammar only
  ThinkTags think_tags = kThinkTags;              // the reasoning's tags, with `thinking`
};

// EBNF source text (root rule `root`) for grammar::GrammarCompiler (GrammarKind::kEbnf).
// InvalidArgument: no tools, a function_name not among them, a parameter schema the engine
// cannot compile. Unimplemented: a format whose calls are not JSON (pythonic).
Result<std::string> tool_call_grammar(const ToolConstraint& constraint);

// The parser whose format tool_choice "required" or a named function holds calls to: `parser`
// (the --tool-call-parser name) where a grammar can write its calls, else kJsonArrayToolCalls
// (no parser; pythonic, whose arguments are Python literals).
std::string_view required_calls_parser(std::string_view parser);

// What opens calls of `parser`'s format in free text (qwen25's <tool_call>, mistral's
// [TOOL_CALLS], deepseek's tool-calls begin); empty for formats whose calls have no marker
// (llama3, gpt-oss, pythonic) or an unknown name.
std::string call_marker(std::string_view parser);

// Some tool asks for strict calls.
bool has_strict_tool(std::span<const FunctionTool> tools);

// tool_choice "auto": free text in which the format's marker (qwen25's <tool_call>, mistral's
// [TOOL_CALLS], deepseek's tool-calls begin) opens a block of calls of the tools, strict tools'
// arguments held to their schemas and the others' to any JSON object; without
// parallel_tool_calls the output ends with its first call; a <think>...</think> where
// `thinking` says is free text. Errors as tool_call_grammar;
// Unimplemented for formats whose calls have no marker (llama3, gpt-oss, pythonic).
Result<std::string> auto_tool_call_grammar(const ToolConstraint& constraint);

}  // namespace sgl::function_call
