// Tool choice and output parsing for the chat routes.
#include "server/tool_choice.h"

#include <cctype>

#include "function_call/tool_constraint.h"

namespace sgl::server {

function_call::OutputParserOptions output_parser_options(const ServerContext& ctx,
                                                         const ChatRequest& req,
                                                         std::string_view prompt) {
  function_call::OutputParserOptions o;
  if (!req.tools_json.empty()) {
    // Forced calls are read in the format their grammar writes (tool_choice_grammar).
    o.tool_call_parser =
        req.tool_choice == ToolChoiceMode::kAuto
            ? ctx.info.tool_call_parser
            : std::string(function_call::required_calls_parser(ctx.info.tool_call_parser));
    o.tool_names = function_call::tool_names(req.tools);
    if (function_call::tool_call_format(o.tool_call_parser) ==
        function_call::ToolCallFormat::kQwen3Coder) {
      o.xml_parameter_kinds = function_call::xml_parameter_kinds(req.tools);
    }
  }
  // As SGLang: separate_reasoning alone decides. enable_thinking false changes the prompt (a
  // template that reads it closes the reasoning there, so the output starts in content); a
  // model whose template ignores it (DeepSeek-R1) still reasons, and that stays separated.
  if (req.separate_reasoning) o.reasoning_parser = ctx.info.reasoning_parser;
  while (!prompt.empty() && std::isspace(static_cast<unsigned char>(prompt.back()))) {
    prompt.remove_suffix(1);
  }
  const std::optional<function_call::ThinkTags> tags =
      function_call::think_tags(o.reasoning_parser);
  o.force_reasoning = tags && prompt.ends_with(tags->start);
  return o;
}

bool grammar_leaves_reasoning(const ServerContext& ctx, const ChatRequest& req,
                              const function_call::OutputParserOptions& parser) {
  const bool thinking =
      req.enable_thinking.value_or(ctx.info.default_enable_thinking.value_or(true));
  return !parser.reasoning_parser.empty() &&
         (thinking || function_call::starts_in_reasoning(parser));
}

std::optional<std::string> strict_auto_tools_unheld(std::string_view parser,
                                                    std::string_view reasoning_parser,
                                                    const tokenizer::Tokenizer& tokenizer) {
  const auto is_special = [&](std::string_view text) {
    const std::optional<int32_t> id = tokenizer.token_to_id(text);
    return id && tokenizer.is_special(*id);
  };
  const std::string marker = function_call::call_marker(parser);
  std::string why;
  if (marker.empty()) {
    why = "its calls have no marker that opens them";
  } else if (is_special(marker)) {
    why = "its call marker " + marker + " is a special token, which grammars never allow";
  } else if (const auto tags = function_call::think_tags(reasoning_parser);
             tags && (is_special(tags->start) || is_special(tags->end))) {
    // The grammar spells the reasoning's tags to leave the reasoning free.
    why = "--reasoning-parser " + std::string(reasoning_parser) + "'s tags " +
          std::string(tags->start) + " / " + std::string(tags->end) +
          " are special tokens, which grammars never allow";
  } else {
    return std::nullopt;
  }
  return "strict tools under tool_choice auto are not held by a grammar with --tool-call-parser " +
         std::string(parser) + " (" + why + "): their calls are parsed as the model writes them";
}

Result<std::shared_ptr<const grammar::CompiledGrammar>> tool_choice_grammar(
    const ServerContext& ctx, const ChatRequest& req,
    const function_call::OutputParserOptions& parser, bool other_grammar) {
  const std::shared_ptr<const grammar::CompiledGrammar> none;
  if (req.tool_choice == ToolChoiceMode::kNone) return none;
  if (req.tool_choice == ToolChoiceMode::kAuto) {
    // Strict tools hold the calls the model chooses to make, where calls are parsed and the
    // format's marker can be written; beside another constraint that one stays (as SGLang).
    if (parser.tool_call_parser.empty() || !ctx.info.strict_auto_tools || other_grammar ||
        !function_call::has_strict_tool(req.tools)) {
      return none;
    }
  } else {
    const char* what = req.tool_choice == ToolChoiceMode::kRequired ? "tool_choice 'required'"
                                                                    : "a named tool_choice";
    if (other_grammar) {
      return invalid_argument(
          std::string(what) +
          " cannot be combined with another output constraint "
          "(response_format, text.format, output_config.format or a grammar field): both "
          "would constrain the output");
    }
  }
  function_call::ToolConstraint constraint{.tools = req.tools,
                                           .function_name = req.tool_choice_name,
                                           .parser = parser.tool_call_parser,
                                           .parallel_tool_calls = req.parallel_tool_calls};
  if (grammar_leaves_reasoning(ctx, req, parser)) {
    constraint.think_tags =
        function_call::think_tags(parser.reasoning_parser).value_or(function_call::kThinkTags);
    constraint.thinking = function_call::starts_in_reasoning(parser)
                              ? function_call::ThinkingStart::kOpen
                              : function_call::ThinkingStart::kMayOpen;
  }
  SGL_ASSIGN_OR_RETURN(const std::string grammar,
                       req.tool_choice == ToolChoiceMode::kAuto
                           ? function_call::auto_tool_call_grammar(constraint)
                           : function_call::tool_call_grammar(constraint));
  return ctx.grammar.compile({grammar::GrammarKind::kEbnf, grammar, "tool_choice"});
}

}  // namespace sgl::server
