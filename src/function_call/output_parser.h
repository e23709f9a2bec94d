// The parsers by SGLang's names (--tool-call-parser, --reasoning-parser) and the parser of one
// chat choice's output: reasoning separated first, then tool calls parsed from what is left.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "function_call/function_tools.h"
#include "function_call/qwen3_coder_parser.h"
#include "function_call/stream_parser.h"
#include "function_call/think_parser.h"

namespace sgl::function_call {

// The tool-call formats, whatever the name (--tool-call-parser) that asks for them.
enum class ToolCallFormat {
  kHermes,       // <tool_call>{json}</tool_call>: qwen25, qwen, hermes
  kQwen3Coder,   // Qwen3-Coder's <tool_call><function=...><parameter=...> calls
  kLlama3,       // bare JSON calls separated by "; "
  kMistral,      // [TOOL_CALLS] [...]
  kPythonic,     // [f(a=1), g()]
  kDeepSeekV3,   // DeepSeek-V3's fenced JSON calls (its parser also reads V3.1's)
  kDeepSeekV31,  // DeepSeek-V3.1's shorter calls
  kGptOss,       // harmony's commentary channel
  kJsonArray,    // [{"name": ..., "parameters": {...}}]: kJsonArrayToolCalls
};

// Not a --tool-call-parser name: the bare JSON array of calls that tool_choice required / named
// holds the output to where no grammar can write the server's own format (no --tool-call-parser,
// pythonic), as SGLang's JSON-schema fallback does; the parser of that array.
inline constexpr std::string_view kJsonArrayToolCalls = "json_array";

// SGLang's names. qwen25, qwen and hermes are the hermes-style <tool_call> format; qwen3_coder
// Qwen3-Coder's XML-like calls; deepseekv3 also reads V3.1's shorter calls (deepseekv31).
std::span<const std::string_view> tool_call_parser_names();
// The format of a --tool-call-parser name (or kJsonArrayToolCalls); nullopt for an unknown one
// (check_tool_call_parser says which are known).
std::optional<ToolCallFormat> tool_call_format(std::string_view name);
// qwen3-thinking is qwen3 whose output always starts inside the reasoning; mistral reads
// Magistral's [THINK]...[/THINK].
std::span<const std::string_view> reasoning_parser_names();

// InvalidArgument naming the known names when `name` is not one.
Status check_tool_call_parser(std::string_view name);
Status check_reasoning_parser(std::string_view name);

struct OutputParserOptions {
  std::string tool_call_parser;  // empty: tool calls are not parsed (no tools, tool_choice none)
  std::string reasoning_parser;  // empty: reasoning is not separated
  // The prompt already opened the reasoning (a chat template ending in <think>): the output
  // starts inside it. deepseek-r1 and qwen3-thinking always do.
  bool force_reasoning = false;
  // qwen3_coder: the request's functions' parameter kinds, which type its values
  // (xml_parameter_kinds; null: every value a string).
  std::shared_ptr<const XmlParameterKinds> xml_parameter_kinds;
  // The request's function names: a JSON call (qwen25, llama3, mistral) to another name is not
  // a call but content, as SGLang drops calls to undefined functions (llama3's bare JSON at the
  // start is often the answer itself). Null: any name.
  std::shared_ptr<const ToolNames> tool_names;
};

// Whether the detokenizer must keep special tokens (skip_special_tokens false) for the parsers
// to see their markers: with any tool-call parser (tools offered; as SGLang and vLLM do:
// <tool_call>, <|python_tag|>, [TOOL_CALLS] are special tokens in some models), and for the
// reasoning formats whose tags are (gpt-oss's harmony markers, mistral's [THINK]).
bool needs_special_tokens(const OutputParserOptions& options);

// The output starts inside <think>...</think> (deepseek-r1, qwen3-thinking, a forced start).
bool starts_in_reasoning(const OutputParserOptions& options);

// The tags of a reasoning parser that reads its reasoning between two tags (all but gpt-oss,
// whose reasoning is a channel); nullopt otherwise.
std::optional<ThinkTags> think_tags(std::string_view reasoning_parser);

// The parser for one output; null when the options ask for no parsing. InvalidArgument for an
// unknown name.
Result<std::unique_ptr<StreamParser>> make_output_parser(const OutputParserOptions& options);

}  // namespace sgl::function_call
