// Where a request's grammar waits for the model's reasoning (SGLang's require_reasoning and its
// ReasonerGrammarBackend): with a reasoning parser that reads the reasoning between tags
// (<think>...</think>: qwen3, qwen3-thinking, deepseek-r1; [THINK]...[/THINK]: mistral), a
// grammar (response_format, regex, ebnf, structural_tag, tool_choice required or named) holds the
// answer after the closing tag instead of the first token, so that a thinking model reasons
// first and its answer is the constrained part. The same gate carries a thinking budget (SGLang's
// max_thinking_tokens, the Messages API's thinking.budget_tokens): once the reasoning has taken
// that many tokens, a newline and the closing tag are forced, as SGLang's
// ThinkingBudgetLogitProcessor does, and the model answers.
#pragma once

#include <cstdint>
#include <vector>

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

// `gate` (not empty) with a budget of `budget` reasoning tokens.
grammar::ReasoningGate with_thinking_budget(const ServerContext& ctx, grammar::ReasoningGate gate,
                                            int64_t budget);

// /generate's max_thinking_tokens for a prompt of `prompt_ids`: the output starts inside the
// reasoning where require_reasoning says so or the prompt leaves it open (its last tag is the
// opening one); otherwise it reasons only if it opens with the opening tag. kInvalidArgument
// without a reasoning parser that reads tags, or where the opening tag is not one token.
Result<grammar::ReasoningGate> generate_budget_gate(const ServerContext& ctx,
                                                    const std::vector<int32_t>& prompt_ids,
                                                    bool require_reasoning, int64_t budget);

}  // namespace sgl::server
