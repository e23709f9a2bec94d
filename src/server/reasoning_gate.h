// Where a request's grammar waits for the model's reasoning (SGLang's require_reasoning and its
// ReasonerGrammarBackend): with a reasoning parser that reads the reasoning between tags
// (<think>...</think>: qwen3, qwen3-thinking, deepseek-r1; [THINK]...[/THINK]: mistral), a
// grammar (response_format, regex, ebnf, structural_tag, tool_choice required or named) holds the
// answer after the closing tag instead of the first token, so that a thinking model reasons
// first and its answer is the constrained part.
#pragma once

#include "core/status.h"
#include "function_call/output_parser.h"
#include "grammar/reasoner_matcher.h"
#include "server/server_context.h"

namespace sgl::server {

// The gate for a chat request whose choices parse with `parser`: none where the reasoning is not
// separated (thinking off, separate_reasoning false, no reasoning parser: the content is then the
// whole output, which the grammar should describe from its first token) or the parser does not
// read tags (gpt-oss, whose reasoning is a channel). An output that starts inside the reasoning
// waits for the closing tag; one that may open it reasons only if its first token is the opening
// (a single token in the served vocabulary; where it is not, the grammar holds from the first
// token).
grammar::ReasoningGate chat_reasoning_gate(const ServerContext& ctx,
                                           const function_call::OutputParserOptions& parser);

// /generate's require_reasoning: the output starts inside the reasoning, and the grammar holds
// after the closing tag. kInvalidArgument without a reasoning parser that reads tags.
Result<grammar::ReasoningGate> required_reasoning_gate(const ServerContext& ctx);

}  // namespace sgl::server
