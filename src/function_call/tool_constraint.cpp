// tool_call_grammar: per-format call templates around the functions' argument grammars.
#include "function_call/tool_constraint.h"

#include <algorithm>
#include <array>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/ordered_json.h"
#include "function_call/output_parser.h"
#include "function_call/qwen3_coder_parser.h"
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
  // What free text may not hold (markup the parser would read as a call without the trigger).
  std::vector<std::string> text_excludes;
  // The arguments as Qwen3-Coder's <parameter=...> elements instead of a JSON object.
  bool xml_parameters = false;
};

std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

// The head of a JSON call, `prefix` then {"name": NAME, "<arguments_key>": (its arguments follow).
std::function<std::string(const std::string&)> json_call_head(std::string prefix,
                                                              std::string arguments_key) {
  return [prefix = std::move(prefix), key = std::move(arguments_key)](const std::string& name) {
    return prefix + "{\"name\": " + quoted(name) + ", \"" + key + "\": ";
  };
}

Result<Format> format_for(std::string_view parser) {
  const std::optional<ToolCallFormat> format = tool_call_format(parser);
  if (!format) return check_tool_call_parser(parser);
  Format f;
  switch (*format) {
    case ToolCallFormat::kHermes:
      f.between_calls = "\n";
      f.head = json_call_head("<tool_call>\n", "arguments");
      f.tail = "}\n</tool_call>";
      f.trigger = "<tool_call>";
      break;
    case ToolCallFormat::kLlama3:
      f.between_calls = "; ";
      f.head = json_call_head("", "parameters");
      f.tail = "}";
      break;
    case ToolCallFormat::kMistral:
      f.before_calls = "[TOOL_CALLS] [";
      f.between_calls = ", ";
      f.after_calls = "]";
      f.head = json_call_head("", "arguments");
      f.tail = "}";
      f.trigger = "[TOOL_CALLS]";
      break;
    case ToolCallFormat::kDeepSeekV3:
      f.before_calls = "<｜tool▁calls▁begin｜>";
      f.between_calls = "\n";
      f.after_calls = "<｜tool▁calls▁end｜>";
      f.head = [](const std::string& name) {
        return "<｜tool▁call▁begin｜>function<｜tool▁sep｜>" + name + "\n```json\n";
      };
      f.tail = "\n```<｜tool▁call▁end｜>";
      f.trigger = f.before_calls;
      f.text_excludes = {"<｜tool▁call▁begin｜>"};  // the parser reads a call there too
      break;
    case ToolCallFormat::kDeepSeekV31:
      f.before_calls = "<｜tool▁calls▁begin｜>";
      f.after_calls = "<｜tool▁calls▁end｜>";
      f.head = [](const std::string& name) {
        return "<｜tool▁call▁begin｜>" + name + "<｜tool▁sep｜>";
      };
      f.tail = "<｜tool▁call▁end｜>";
      f.trigger = f.before_calls;
      f.text_excludes = {"<｜tool▁call▁begin｜>"};
      break;
    case ToolCallFormat::kGptOss:
      // NOTE: harmony's markers are special tokens; a matcher that never allows special tokens
      // cannot produce this text token by token.
      f.between_calls = "<|start|>assistant";
      f.head = [](const std::string& name) {
        return "<|channel|>commentary to=functions." + name + " <|constrain|>json<|message|>";
      };
      f.tail = "<|call|>";
      break;
    case ToolCallFormat::kQwen3Coder:
      f.between_calls = "\n";
      f.head = [](const std::string& name) { return "<tool_call>\n<function=" + name + ">\n"; };
      f.tail = "</function>\n</tool_call>";
      f.trigger = "<tool_call>";
      f.text_excludes = {"<function="};
      f.xml_parameters = true;
      break;
    case ToolCallFormat::kJsonArray:
      f.before_calls = "[";
      f.between_calls = ", ";
      f.after_calls = "]";
      f.head = json_call_head("", "parameters");
      f.tail = "}";
      break;
    case ToolCallFormat::kPythonic:
      return unimplemented(
          "tool calls cannot be enforced with the pythonic tool-call format yet (its arguments "
          "are not JSON)");
  }
  return f;
}

// Which functions' calls, and how their arguments are held.
enum class Arguments { kSchema, kSchemaIfStrict };

// A Qwen3-Coder parameter's JSON value grammar, embedded in `g` under `prefix`. Its strings hold
// '<' only as \u003c: the parser ends a value at the first "</parameter>", "<parameter=" or
// "</function>", even inside a JSON string.
Result<ExprId> xml_json_value(Grammar& g, const std::string& schema_json,
                              const std::string& prefix) {
  grammar::JsonSchemaOptions options;
  options.escape_less_than = true;
  SGL_ASSIGN_OR_RETURN(const Grammar schema, grammar::json_schema_to_grammar(schema_json, options));
  return g.ref(g.import_rules(schema, prefix));
}

// What ends a Qwen3-Coder parameter value for the parser, wherever it appears; the last one is
// the value's own end.
constexpr std::array<std::string_view, 3> kXmlValueEnds = {"<parameter=", "</function>",
                                                           "</parameter>"};

// A Qwen3-Coder parameter value written as raw text: anything up to the first </parameter>
// (which it includes), without what would end the value early for the parser.
Result<ExprId> raw_parameter_text(Grammar& g) {
  SGL_ASSIGN_OR_RETURN(
      const RuleId text,
      grammar::add_trigger_text(
          g, {kXmlValueEnds.begin(), kXmlValueEnds.end()},
          [&](size_t t, RuleId) { return t == kXmlValueEnds.size() - 1 ? g.empty() : ExprId{-1}; },
          /*may_end=*/false));
  return g.ref(text);
}

// The JSON types a property schema names, by `type` (a list too) or its anyOf / oneOf
// branches' types, null left out.
std::vector<std::string> json_types(const nlohmann::ordered_json& schema) {
  std::vector<std::string> types;
  const auto add = [&](const nlohmann::ordered_json& t) {
    if (t.is_string() && t != "null" &&
        std::find(types.begin(), types.end(), t.get<std::string>()) == types.end()) {
      types.push_back(t.get<std::string>());
    }
  };
  if (!schema.is_object()) return types;
  if (const auto t = schema.find("type"); t != schema.end()) {
    if (t->is_array()) {
      for (const auto& v : *t) add(v);
    } else {
      add(*t);
    }
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (const auto b = schema.find(key); b != schema.end() && b->is_array()) {
      for (const auto& branch : *b) {
        const std::vector<std::string> branch_types = json_types(branch);
        // A branch of no stated type ($ref, {}) counts as one more type.
        const bool null_only =
            branch.is_object() && branch.contains("type") && branch["type"] == "null";
        if (branch_types.empty() && !null_only) add(nlohmann::ordered_json("(untyped)"));
        for (const std::string& t : branch_types) add(nlohmann::ordered_json(t));
      }
    }
  }
  return types;
}

// Keys that leave a string schema's raw text unconstrained.
bool is_plain_string_key(const std::string& key) {
  static const std::vector<std::string> kPlain = {"type",       "description", "title",
                                                  "default",    "examples",    "$comment",
                                                  "deprecated", "readOnly",    "writeOnly"};
  return std::find(kPlain.begin(), kPlain.end(), key) != kPlain.end();
}

// Qwen3-Coder's parameters of `tool` (qwen3_coder_parser.h): its schema's properties in order,
// each `<parameter=NAME>\nVALUE\n</parameter>\n`, the required ones always; a value whose type
// the parser reads as a string is raw text (an enum or const: one of its strings), any other the
// JSON of its schema. With `any`, any parameters with raw values (a tool that is not strict).
Result<ExprId> xml_parameters(Grammar& g, const FunctionTool& tool, bool any, size_t index) {
  const auto any_parameters = [&]() -> Result<ExprId> {
    SGL_ASSIGN_OR_RETURN(const ExprId raw, raw_parameter_text(g));
    const ExprId name = g.plus(g.char_class({{'\n', '\n'}, {'<', '<'}, {'>', '>'}}, true));
    return g.star(g.sequence({g.bytes("<parameter="), name, g.bytes(">\n"), raw, g.bytes("\n")}));
  };
  if (any) return any_parameters();
  // The tools were checked when read: their parameters are a JSON object.
  const nlohmann::ordered_json schema = tool.parameters_json.empty()
                                            ? nlohmann::ordered_json::object()
                                            : parse_ordered_json(tool.parameters_json).value();
  const auto properties = schema.find("properties");
  if (properties == schema.end() || !properties->is_object()) {
    // No properties named: none (additionalProperties false: a function without arguments),
    // or any, unless the schema says more about them.
    const auto additional = schema.find("additionalProperties");
    if (additional != schema.end() && *additional == false) return g.empty();
    if (additional != schema.end() && *additional != true) {
      return unimplemented("the parameters of function '" + tool.name +
                           "' (an 'additionalProperties' schema without 'properties') cannot be "
                           "held as qwen3_coder parameters yet");
    }
    for (const char* key : {"anyOf", "oneOf", "allOf", "patternProperties", "$ref"}) {
      if (schema.contains(key)) {
        return unimplemented("the parameters of function '" + tool.name + "' ('" + key +
                             "' without 'properties') cannot be held as qwen3_coder parameters "
                             "yet");
      }
    }
    return any_parameters();
  }
  std::vector<std::string> required;
  if (const auto r = schema.find("required"); r != schema.end() && r->is_array()) {
    for (const auto& name : *r) {
      if (name.is_string()) required.push_back(name.get<std::string>());
    }
  }
  // The document's definitions, for $refs inside a property's schema.
  const auto add_defs = [&](nlohmann::ordered_json& sub) {
    if (!sub.is_object()) return;
    for (const char* key : {"$defs", "definitions"}) {
      const auto top = schema.find(key);
      if (top == schema.end() || !top->is_object()) continue;
      nlohmann::ordered_json& own = sub[key];
      if (!own.is_object()) own = nlohmann::ordered_json::object();
      for (const auto& [name, def] : top->items()) {
        if (!own.contains(name)) own[name] = def;
      }
    }
  };
  std::vector<ExprId> params;
  size_t k = 0;
  for (const auto& [name, property] : properties->items()) {
    const std::string where = "parameter '" + name + "' of function '" + tool.name + "'";
    if (name.find_first_of("<>\n") != std::string::npos) {
      return unimplemented(where + " cannot be written as a qwen3_coder parameter");
    }
    const std::string property_json = property.dump();
    const std::vector<std::string> types = json_types(property);
    if (types.size() > 1 || std::find(types.begin(), types.end(), "(untyped)") != types.end()) {
      return unimplemented(where +
                           " has several types or a union with a $ref, which qwen3_coder's "
                           "values (converted by one stated type) cannot hold yet");
    }
    ExprId value;
    if (xml_value_kind(property_json) == XmlValueKind::kString) {
      std::vector<std::string> literals;
      // A literal the parser would cut short cannot be held either.
      const auto add_literal = [&](const nlohmann::ordered_json& v) {
        if (!v.is_string()) return false;
        const auto& text = v.get_ref<const std::string&>();
        for (const std::string_view end : kXmlValueEnds) {
          if (text.find(end) != std::string::npos) return false;
        }
        literals.push_back(text + "\n</parameter>");
        return true;
      };
      bool plain = true;  // a schema that is not an object (true) holds nothing
      if (property.is_object()) {
        for (const auto& [key, v] : property.items()) {
          if (key == "enum" && v.is_array()) {
            for (const auto& e : v) plain = add_literal(e) && plain;
          } else if (key == "const") {
            plain = add_literal(v) && plain;
          } else {
            plain = plain && is_plain_string_key(key);
          }
        }
      }
      if (!plain) {
        return unimplemented(where + ": a schema " + property_json +
                             " read as a string cannot be held in qwen3_coder's raw parameter "
                             "text yet (only plain strings and string enums / consts without "
                             "</parameter>, <parameter= or </function>)");
      }
      if (literals.empty()) {
        SGL_ASSIGN_OR_RETURN(value, raw_parameter_text(g));
      } else {
        value = g.one_of(literals);
      }
    } else {
      nlohmann::ordered_json sub = property;
      add_defs(sub);
      auto json = xml_json_value(g, sub.dump(),
                                 "f" + std::to_string(index) + "p" + std::to_string(k) + "_");
      if (!json.ok()) return invalid_argument(where + ": " + json.status().message());
      value = g.sequence({*json, g.bytes("\n</parameter>")});
    }
    const ExprId param = g.sequence({g.bytes("<parameter=" + name + ">\n"), value, g.bytes("\n")});
    const bool needed = std::find(required.begin(), required.end(), name) != required.end();
    params.push_back(needed ? param : g.optional(param));
    ++k;
  }
  return params.empty() ? g.empty() : g.sequence(std::move(params));
}

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
    if (format.xml_parameters) {
      SGL_ASSIGN_OR_RETURN(
          args,
          xml_parameters(g, tool, arguments == Arguments::kSchemaIfStrict && !tool.strict, i));
    } else if (arguments == Arguments::kSchemaIfStrict && !tool.strict) {
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

std::string_view required_calls_parser(std::string_view parser) {
  const std::optional<ToolCallFormat> format = tool_call_format(parser);
  return format && *format != ToolCallFormat::kPythonic ? parser : kJsonArrayToolCalls;
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
                                                   {.stop_after_first = !c.parallel_tool_calls,
                                                    .excludes = format.text_excludes,
                                                    .ends = {}}));
  ExprId body = g.ref(text);
  if (c.thinking != ThinkingStart::kNone) {
    // The reasoning: free text until </think>, which opens the text with calls. A call marker
    // that would end it too (ThinkTags::interrupt) is kept out of it: calls come after
    // </think>, where the grammar holds them to their schemas.
    const std::string end(c.think_tags.end);
    const grammar::TriggeredTag end_thinking = {end, body};
    std::vector<std::string> excludes;
    if (!c.think_tags.interrupt.empty()) excludes.emplace_back(c.think_tags.interrupt);
    SGL_ASSIGN_OR_RETURN(
        const RuleId reasoning,
        grammar::add_triggered_tags(g, {end}, {&end_thinking, 1},
                                    {.stop_after_first = true, .excludes = excludes, .ends = {}}));
    body =
        c.thinking == ThinkingStart::kOpen
            ? g.ref(reasoning)
            : g.choice({g.sequence({g.star(g.char_class({{' ', ' '}, {'\t', '\n'}, {'\r', '\r'}})),
                                    g.bytes(c.think_tags.start), g.ref(reasoning)}),
                        body});
  }
  g.set_body(root, body);
  g.set_root(root);
  return g.to_string();
}

}  // namespace sgl::function_call
