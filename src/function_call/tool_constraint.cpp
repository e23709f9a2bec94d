// tool_call_grammar: per-format call templates around the functions' argument grammars.
#include "function_call/tool_constraint.h"

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "function_call/output_parser.h"
#include "function_call/think_parser.h"
#include "grammar/grammar.h"
#include "grammar/json_schema_compiler.h"
#include "grammar/triggered_tags.h"

namespace sgl::function_call {
namespace {

using grammar::ExprId;
using grammar::Grammar;
using grammar::RuleId;

// The call template of a format: head(name), the arguments, tail; what goes before, between and
// after the calls; and the marker that opens calls in free text (tool_choice auto), if any.
struct Format {
  std::string before_calls, between_calls, after_calls;
  std::function<std::string(const std::string& name)> head;
  std::string tail;
  // What opens calls in free text, a prefix of before_calls + head; empty: calls have no marker
  // of their own (cannot be triggered).
  std::string trigger;
};

std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

Result<Format> format_for(std::string_view parser) {
  Format f;
  if (parser == "qwen25" || parser == "qwen") {
    f.between_calls = "\n";
    f.head = [](const std::string& name) {
      return "<tool_call>\n{\"name\": " + quoted(name) + ", \"arguments\": ";
    };
    f.tail = "}\n</tool_call>";
    f.trigger = "<tool_call>";
  } else if (parser == "llama3") {
    f.between_calls = "; ";
    f.head = [](const std::string& name) {
      return "{\"name\": " + quoted(name) + ", \"parameters\": ";
    };
    f.tail = "}";
  } else if (parser == "mistral") {
    f.before_calls = "[TOOL_CALLS] [";
    f.between_calls = ", ";
    f.after_calls = "]";
    f.head = [](const std::string& name) {
      return "{\"name\": " + quoted(name) + ", \"arguments\": ";
    };
    f.tail = "}";
    f.trigger = "[TOOL_CALLS]";
  } else if (parser == "deepseekv3") {
    f.before_calls = "<｜tool▁calls▁begin｜>";
    f.between_calls = "\n";
    f.after_calls = "<｜tool▁calls▁end｜>";
    f.head = [](const std::string& name) {
      return "<｜tool▁call▁begin｜>function<｜tool▁sep｜>" + name + "\n```json\n";
    };
    f.tail = "\n```<｜tool▁call▁end｜>";
    f.trigger = f.before_calls;
  } else if (parser == "deepseekv31") {
    f.before_calls = "<｜tool▁calls▁begin｜>";
    f.after_calls = "<｜tool▁calls▁end｜>";
    f.head = [](const std::string& name) {
      return "<｜tool▁call▁begin｜>" + name + "<｜tool▁sep｜>";
    };
    f.tail = "<｜tool▁call▁end｜>";
    f.trigger = f.before_calls;
  } else if (parser == "gpt-oss") {
    // NOTE: harmony's markers are special tokens; a matcher that never allows special tokens
    // cannot produce this text token by token.
    f.between_calls = "<|start|>assistant";
    f.head = [](const std::string& name) {
      return "<|channel|>commentary to=functions." + name + " <|constrain|>json<|message|>";
    };
    f.tail = "<|call|>";
  } else if (parser == "pythonic") {
    return unimplemented(
        "tool calls cannot be enforced with the pythonic tool-call format yet (its arguments "
        "are not JSON)");
  } else {
    SGL_RETURN_IF_ERROR(check_tool_call_parser(parser));
  }
  return f;
}

// Which functions' calls, and how their arguments are held.
enum class Arguments { kSchema, kSchemaIfStrict };

// The calls block: before_calls, one call (or several with parallel_tool_calls), after_calls.
// The block's first `skip` bytes are left out (the trigger that opened it).
Result<ExprId> calls_block(Grammar& g, const ToolConstraint& c, const Format& format,
                           Arguments arguments, size_t skip) {
  std::vector<ExprId> first, any;
  RuleId any_object = -1;  // shared by the tools that are not strict
  for (size_t i = 0; i < c.tools.size(); ++i) {
    const FunctionTool& tool = c.tools[i];
    if (!c.function_name.empty() && tool.name != c.function_name) continue;
    ExprId args;
    if (arguments == Arguments::kSchemaIfStrict && !tool.strict) {
      if (any_object < 0) any_object = g.import_rules(grammar::any_json_object_grammar(), "any_");
      args = g.ref(any_object);
    } else if (tool.parameters_json.empty()) {
      args = g.bytes("{}");
    } else {
      auto schema = grammar::json_schema_to_grammar(tool.parameters_json);
      if (!schema.ok()) {
        return invalid_argument("the parameters of function '" + tool.name +
                                "' are not a supported JSON Schema: " + schema.status().message());
      }
      args = g.ref(g.import_rules(*schema, "f" + std::to_string(i) + "_"));
    }
    const std::string head = format.head(tool.name);
    first.push_back(g.sequence(
        {g.bytes((format.before_calls + head).substr(skip)), args, g.bytes(format.tail)}));
    any.push_back(g.sequence({g.bytes(head), args, g.bytes(format.tail)}));
  }
  if (first.empty()) {
    return invalid_argument("tool_choice names function '" + std::string(c.function_name) +
                            "', which is not in 'tools'");
  }
  std::vector<ExprId> block = {g.choice(std::move(first))};
  if (c.parallel_tool_calls) {
    const RuleId call = g.add_rule(g.fresh_name("call"));
    g.set_body(call, g.choice(std::move(any)));
    block.push_back(g.star(g.sequence({g.bytes(format.between_calls), g.ref(call)})));
  }
  block.push_back(g.bytes(format.after_calls));
  return g.sequence(std::move(block));
}

}  // namespace

Result<std::string> tool_call_grammar(const ToolConstraint& c) {
  if (c.tools.empty()) return invalid_argument("'tool_choice' needs 'tools'");
  SGL_ASSIGN_OR_RETURN(const Format format, format_for(c.parser));
  Grammar g;
  const RuleId root = g.add_rule("root");
  SGL_ASSIGN_OR_RETURN(const ExprId block, calls_block(g, c, format, Arguments::kSchema, 0));
  g.set_body(root, block);
  g.set_root(root);
  return g.to_string();
}

std::string call_marker(std::string_view parser) {
  const Result<Format> format = format_for(parser);
  return format.ok() ? format->trigger : std::string();
}

bool has_strict_tool(std::span<const FunctionTool> tools) {
  return std::any_of(tools.begin(), tools.end(), [](const FunctionTool& t) { return t.strict; });
}

Result<std::string> auto_tool_call_grammar(const ToolConstraint& c) {
  if (c.tools.empty()) return invalid_argument("'tool_choice' needs 'tools'");
  SGL_ASSIGN_OR_RETURN(const Format format, format_for(c.parser));
  if (format.trigger.empty()) {
    return unimplemented("strict tools with tool_choice 'auto' cannot be enforced with the " +
                         std::string(c.parser) +
                         " tool-call format (its calls have no marker that opens them in free "
                         "text); use tool_choice 'required' or strict false");
  }
  Grammar g;
  const RuleId root = g.add_rule("root");
  SGL_ASSIGN_OR_RETURN(const ExprId rest, calls_block(g, c, format, Arguments::kSchemaIfStrict,
                                                      format.trigger.size()));
  const grammar::TriggeredTag block = {format.trigger, rest};
  SGL_ASSIGN_OR_RETURN(const RuleId text,
                       grammar::add_triggered_tags(g, {format.trigger}, {&block, 1},
                                                   {.stop_after_first = !c.parallel_tool_calls}));
  ExprId body = g.ref(text);
  if (c.thinking != ThinkingStart::kNone) {
    // The reasoning: free text until </think>, which opens the text with calls.
    const grammar::TriggeredTag end_thinking = {std::string(kThinkEnd), body};
    SGL_ASSIGN_OR_RETURN(
        const RuleId reasoning,
        grammar::add_triggered_tags(g, {std::string(kThinkEnd)}, {&end_thinking, 1},
                                    {.stop_after_first = true}));
    body =
        c.thinking == ThinkingStart::kOpen
            ? g.ref(reasoning)
            : g.choice({g.sequence({g.star(g.char_class({{' ', ' '}, {'\t', '\n'}, {'\r', '\r'}})),
                                    g.bytes(kThinkStart), g.ref(reasoning)}),
                        body});
  }
  g.set_body(root, body);
  g.set_root(root);
  return g.to_string();
}

}  // namespace sgl::function_call
