// What a chat request's tools, tool_choice and reasoning settings do to its generation: the
// output parser of each choice, and the constraint tool_choice (required, a named function,
// auto with strict tools) puts on decoding.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "function_call/output_parser.h"
#include "grammar/compiled_grammar.h"
#include "server/openai_types.h"
#include "server/server_context.h"
#include "tokenizer/tokenizer.h"

namespace sgl::server {

// Whether a grammar leaves the reasoning free before it holds the answer: with a reasoning
// parser, unless thinking is off (chat_template_kwargs.enable_thinking false, the request's or
// --default-chat-template-kwargs') and the prompt did not open the reasoning anyway (a template
// that ignores the switch). Thinking off, the grammar holds from the first token, as SGLang's
// ReasonerGrammarBackend without require_reasoning.
bool grammar_leaves_reasoning(const ServerContext& ctx, const ChatRequest& req,
                              const function_call::OutputParserOptions& parser);

// The parser for the request's choices: tool calls when the request offers tools (tool_choice
// not none) and the server has --tool-call-parser, or tool_choice is required / named (read in
// the format their grammar writes: function_call::required_calls_parser); reasoning with
// --reasoning-parser unless separate_reasoning is false (SGLang's rule; enable_thinking false
// shapes the prompt, not the parsing). `prompt` is the rendered prompt: one that ends with <think>
// has opened the reasoning already.
function_call::OutputParserOptions output_parser_options(const ServerContext& ctx,
                                                         const ChatRequest& req,
                                                         std::string_view prompt);

// Why strict tools under tool_choice auto cannot be held by a grammar with `parser` (and the
// `reasoning_parser`, whose tags the grammar spells) and the served `tokenizer`: the format's
// calls have no marker, or the marker or a reasoning tag is a special token (which grammars never
// allow); nullopt: they can.
std::optional<std::string> strict_auto_tools_unheld(std::string_view parser,
                                                    std::string_view reasoning_parser,
                                                    const tokenizer::Tokenizer& tokenizer);

// The grammar tool_choice puts on every choice of `req` (compiled by the server's
// GrammarBackend; null: none). "required" or a named function: valid calls of the allowed
// functions (function_call::tool_call_grammar) in `parser`'s format (SGLang's JSON array where
// the server's own format has no grammar). auto with a strict tool, where `parser` parses
// calls, the server can hold them (ServerInfo::strict_auto_tools) and the request has no
// constraint of its own (`other_grammar`; that one stays, as SGLang): free text whose calls are
// held to their format and the strict tools' schemas (auto_tool_call_grammar; reasoning left
// free). Errors are 400s: required / named beside another constraint, a schema the grammar
// engine cannot compile. none, or auto otherwise: null.
Result<std::shared_ptr<const grammar::CompiledGrammar>> tool_choice_grammar(
    const ServerContext& ctx, const ChatRequest& req,
    const function_call::OutputParserOptions& parser, bool other_grammar);

}  // namespace sgl::server
