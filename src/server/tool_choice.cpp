// Tool choice and output parsing for the chat routes.
#include "server/tool_choice.h"

#include <cctype>

#include "function_call/tool_constraint.h"

namespace sgl::server {

function_call::OutputParserOptions output_parser_options(const ServerContext& ctx,
                                                         const ChatRequest& req,
                                                         std::string_view prompt) {
  function_call::OutputParserOptions o;
  if (!req.tools_json.empty()) o.tool_call_parser = ctx.info.tool_call_parser;
  if (req.separate_reasoning && req.enable_thinking.value_or(true)) {
    o.reasoning_parser = ctx.info.reasoning_parser;
  }
  while (!prompt.empty() && std::isspace(static_cast<unsigned char>(prompt.back()))) {
    prompt.remove_suffix(1);
  }
  o.force_reasoning = prompt.ends_with("<think>");
  return o;
}

Status apply_tool_choice(const ServerContext& ctx, const ChatRequest& req,
                         const function_call::OutputParserOptions& parser,
                         engine::GenerateRequest& request) {
  const bool forced =
      req.tool_choice == ToolChoiceMode::kRequired || req.tool_choice == ToolChoiceMode::kNamed;
  // Strict tools under auto hold the calls the model chooses to make (where calls are parsed).
  const bool strict_auto = req.tool_choice == ToolChoiceMode::kAuto &&
                           !parser.tool_call_parser.empty() &&
                           function_call::has_strict_tool(req.tools);
  if (!forced && !strict_auto) return Status::ok_status();
  const char* what = strict_auto ? "strict tools with tool_choice 'auto'"
                     : req.tool_choice == ToolChoiceMode::kRequired ? "tool_choice 'required'"
                                                                    : "a named tool_choice";
  if (ctx.info.tool_call_parser.empty()) {
    return invalid_argument(std::string(what) +
                            " needs the server started with --tool-call-parser");
  }
  function_call::ToolConstraint constraint{.tools = req.tools,
                                           .function_name = req.tool_choice_name,
                                           .parser = ctx.info.tool_call_parser,
                                           .parallel_tool_calls = req.parallel_tool_calls};
  if (!parser.reasoning_parser.empty()) {
    constraint.thinking = function_call::starts_in_reasoning(parser)
                              ? function_call::ThinkingStart::kOpen
                              : function_call::ThinkingStart::kMayOpen;
  }
  SGL_ASSIGN_OR_RETURN(const std::string grammar,
                       strict_auto ? function_call::auto_tool_call_grammar(constraint)
                                   : function_call::tool_call_grammar(constraint));
  if (request.grammar) {
    return invalid_argument(std::string(what) +
                            " cannot be combined with response_format or a grammar field: both "
                            "would constrain the output");
  }
  SGL_ASSIGN_OR_RETURN(request.grammar,
                       ctx.grammar.compile({grammar::GrammarKind::kEbnf, grammar, "tool_choice"}));
  return Status::ok_status();
}

}  // namespace sgl::server
