// tool_call_grammar: per-format call templates around the functions' argument grammars.
#include "function_call/tool_constraint.h"

#include <functional>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "function_call/output_parser.h"
#include "grammar/grammar.h"
#include "grammar/json_schema_compiler.h"

namespace sgl::function_call {
namespace {

using grammar::ExprId;
using grammar::ExprKind;
using grammar::Grammar;
using grammar::RuleId;

// Copies `src`'s rules into `dst` under fresh names starting with `prefix`; returns the rule
// that `src`'s root became.
RuleId copy_rules(const Grammar& src, Grammar& dst, const std::string& prefix) {
  std::vector<RuleId> ids(src.num_rules());
  for (RuleId r = 0; r < src.num_rules(); ++r) {
    ids[r] = dst.add_rule(dst.fresh_name(prefix + src.rule(r).name));
  }
  std::function<ExprId(ExprId)> copy = [&](ExprId id) -> ExprId {
    const grammar::Expr& e = src.expr(id);
    std::vector<ExprId> children;
    for (ExprId c : e.children) children.push_back(copy(c));
    switch (e.kind) {
      case ExprKind::kBytes:
        return dst.bytes(e.bytes);
      case ExprKind::kCharClass:
        return dst.char_class(e.ranges, e.negated);
      case ExprKind::kSequence:
        return dst.sequence(std::move(children));
      case ExprKind::kChoice:
        return dst.choice(std::move(children));
      case ExprKind::kRuleRef:
        return dst.ref(ids[e.rule]);
      case ExprKind::kRepeat:
        return dst.repeat(children[0], e.min, e.max);
    }
    return dst.empty();
  };
  for (RuleId r = 0; r < src.num_rules(); ++r) {
    if (src.rule(r).body >= 0) dst.set_body(ids[r], copy(src.rule(r).body));
  }
  return ids[src.root()];
}

// One call of `name` with arguments `args` in the format, and what separates parallel calls.
struct Format {
  std::string before_calls, between_calls, after_calls;
  std::function<ExprId(Grammar&, const std::string& name, ExprId args)> call;
};

std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

Result<Format> format_for(std::string_view parser) {
  Format f;
  if (parser == "qwen25" || parser == "qwen") {
    f.between_calls = "\n";
    f.call = [](Grammar& g, const std::string& name, ExprId args) {
      return g.sequence({g.bytes("<tool_call>\n{\"name\": " + quoted(name) + ", \"arguments\": "),
                         args, g.bytes("}\n</tool_call>")});
    };
  } else if (parser == "llama3") {
    f.between_calls = "; ";
    f.call = [](Grammar& g, const std::string& name, ExprId args) {
      return g.sequence(
          {g.bytes("{\"name\": " + quoted(name) + ", \"parameters\": "), args, g.bytes("}")});
    };
  } else if (parser == "mistral") {
    f.before_calls = "[TOOL_CALLS] [";
    f.between_calls = ", ";
    f.after_calls = "]";
    f.call = [](Grammar& g, const std::string& name, ExprId args) {
      return g.sequence(
          {g.bytes("{\"name\": " + quoted(name) + ", \"arguments\": "), args, g.bytes("}")});
    };
  } else if (parser == "deepseekv3") {
    f.before_calls = "<｜tool▁calls▁begin｜>";
    f.between_calls = "\n";
    f.after_calls = "<｜tool▁calls▁end｜>";
    f.call = [](Grammar& g, const std::string& name, ExprId args) {
      return g.sequence(
          {g.bytes("<｜tool▁call▁begin｜>function<｜tool▁sep｜>" + name + "\n```json\n"), args,
           g.bytes("\n```<｜tool▁call▁end｜>")});
    };
  } else if (parser == "deepseekv31") {
    f.before_calls = "<｜tool▁calls▁begin｜>";
    f.after_calls = "<｜tool▁calls▁end｜>";
    f.call = [](Grammar& g, const std::string& name, ExprId args) {
      return g.sequence({g.bytes("<｜tool▁call▁begin｜>" + name + "<｜tool▁sep｜>"), args,
                         g.bytes("<｜tool▁call▁end｜>")});
    };
  } else if (parser == "gpt-oss") {
    // NOTE: harmony's markers are special tokens; a matcher that never allows special tokens
    // cannot produce this text token by token.
    f.between_calls = "<|start|>assistant";
    f.call = [](Grammar& g, const std::string& name, ExprId args) {
      return g.sequence(
          {g.bytes("<|channel|>commentary to=functions." + name + " <|constrain|>json<|message|>"),
           args, g.bytes("<|call|>")});
    };
  } else if (parser == "pythonic") {
    return unimplemented(
        "tool_choice 'required' or a named function cannot be enforced with the pythonic "
        "tool-call format yet (its arguments are not JSON)");
  } else {
    SGL_RETURN_IF_ERROR(check_tool_call_parser(parser));
  }
  return f;
}

}  // namespace

Result<std::string> tool_call_grammar(const ToolConstraint& c) {
  if (c.tools.empty()) return invalid_argument("'tool_choice' needs 'tools'");
  SGL_ASSIGN_OR_RETURN(Format format, format_for(c.parser));
  Grammar g;
  const RuleId root = g.add_rule("root");
  std::vector<ExprId> calls;
  for (size_t i = 0; i < c.tools.size(); ++i) {
    const FunctionTool& tool = c.tools[i];
    if (!c.function_name.empty() && tool.name != c.function_name) continue;
    ExprId args;
    if (tool.parameters_json.empty()) {
      args = g.bytes("{}");
    } else {
      auto schema = grammar::json_schema_to_grammar(tool.parameters_json);
      if (!schema.ok()) {
        return invalid_argument("the parameters of function '" + tool.name +
                                "' are not a supported JSON Schema: " + schema.status().message());
      }
      args = g.ref(copy_rules(*schema, g, "f" + std::to_string(i) + "_"));
    }
    calls.push_back(format.call(g, tool.name, args));
  }
  if (calls.empty()) {
    return invalid_argument("tool_choice names function '" + std::string(c.function_name) +
                            "', which is not in 'tools'");
  }
  const RuleId call = g.add_rule("call");
  g.set_body(call, calls.size() == 1 ? calls[0] : g.choice(std::move(calls)));
  ExprId body = g.ref(call);
  if (c.parallel_tool_calls) {
    body = g.sequence({body, g.star(g.sequence({g.bytes(format.between_calls), g.ref(call)}))});
  }
  g.set_body(root, g.sequence({g.bytes(format.before_calls), body, g.bytes(format.after_calls)}));
  g.set_root(root);
  return g.to_string();
}

}  // namespace sgl::function_call
