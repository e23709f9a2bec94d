// The tool-call grammar: compiled by the grammar engine, it accepts valid calls of the allowed
// functions in each parser's format (and the parser reads them back), and rejects other names,
// arguments that break the schema, and a second call without parallel_tool_calls.
#include "function_call/tool_constraint.h"

#include <gtest/gtest.h>

#include "function_call/function_tools.h"
#include "function_call/output_parser.h"
#include "grammar/grammar_compiler.h"
#include "grammar/grammar_matcher.h"

namespace sgl::function_call {
namespace {

constexpr const char* kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather",
   "parameters": {"type": "object", "properties": {"city": {"type": "string"},
     "unit": {"enum": ["c", "f"]}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "now"}}
])";

std::vector<FunctionTool> tools() {
  auto t = read_function_tools(kTools);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return std::move(t).value();
}

// A grammar's full matches: tool_call_grammar's by default, or another builder's.
class Checker {
 public:
  explicit Checker(const ToolConstraint& c,
                   Result<std::string> (*build)(const ToolConstraint&) = tool_call_grammar) {
    auto source = build(c);
    EXPECT_TRUE(source.ok()) << source.status().to_string();
    auto compiled = compiler_.compile(grammar::GrammarKind::kEbnf, *source);
    EXPECT_TRUE(compiled.ok()) << compiled.status().to_string() << "\n" << *source;
    grammar_ = *compiled;
  }
  bool accepts(const std::string& s) const {
    grammar::GrammarMatcher m(grammar_);
    return m.accept_bytes(s) && m.can_terminate();
  }

 private:
  grammar::GrammarCompiler compiler_{std::make_shared<grammar::TokenizerInfo>()};
  std::shared_ptr<const grammar::CompiledGrammar> grammar_;
};

ParsedOutput parse(std::string_view parser, const std::string& text) {
  auto p = make_output_parser({std::string(parser), "", false});
  return parse_whole(**p, text);
}

struct FormatCase {
  std::string parser;
  std::string one;  // get_weather(city=Paris)
  std::string two;  // that, then now()
  std::string wrong_name;
  std::string bad_args;  // city missing
};

std::vector<FormatCase> format_cases() {
  return {
      {"qwen25",
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
       "\"Paris\"}}\n</tool_call>",
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
       "</tool_call>\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>",
       "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"unit\": \"c\"}}\n</tool_call>"},
      {"llama3", "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
       "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}; {\"name\": \"now\", "
       "\"parameters\": {}}",
       "{\"name\": \"x\", \"parameters\": {}}",
       "{\"name\": \"get_weather\", \"parameters\": {\"city\": 3}}"},
      {"mistral",
       "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
       "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, "
       "{\"name\": \"now\", \"arguments\": {}}]",
       "[TOOL_CALLS] [{\"name\": \"nope\", \"arguments\": {}}]",
       "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": "
       "\"k\"}}]"},
      {"deepseekv3",
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
       "{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
       "{\"city\": "
       "\"Paris\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>now\n"
       "```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>zz\n```json\n{}\n```"
       "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
       "{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
      {"qwen3_coder",
       "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
       "</function>\n</tool_call>",
       "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
       "</function>\n</tool_call>\n<tool_call>\n<function=now>\n</function>\n</tool_call>",
       "<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
       "<tool_call>\n<function=get_weather>\n<parameter=unit>\nc\n</parameter>\n</function>\n"
       "</tool_call>"},
      {"gpt-oss",
       "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": "
       "\"Paris\"}<|call|>",
       "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": "
       "\"Paris\"}<|call|><|start|>assistant<|channel|>commentary to=functions.now "
       "<|constrain|>json<|message|>{}<|call|>",
       "<|channel|>commentary to=functions.other <|constrain|>json<|message|>{}<|call|>",
       "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"town\": "
       "\"Paris\"}<|call|>"},
      {std::string(kJsonArrayToolCalls),
       "[{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}]",
       "[{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}, {\"name\": "
       "\"now\", \"parameters\": {}}]",
       "[{\"name\": \"get_time\", \"parameters\": {}}]",
       "[{\"name\": \"get_weather\", \"parameters\": {}}]"},
  };
}

TEST(ToolConstraint, EveryFormat) {
  const auto t = tools();
  for (const FormatCase& f : format_cases()) {
    SCOPED_TRACE(f.parser);
    Checker required({t, "", f.parser, true});
    EXPECT_TRUE(required.accepts(f.one));
    EXPECT_TRUE(required.accepts(f.two));
    EXPECT_FALSE(required.accepts(f.wrong_name));
    EXPECT_FALSE(required.accepts(f.bad_args));
    EXPECT_FALSE(required.accepts(""));
    EXPECT_FALSE(required.accepts("Sure! " + f.one));
    // What the grammar forces, the parser reads as the calls.
    const ParsedOutput two = parse(f.parser, f.two);
    ASSERT_EQ(two.calls.size(), 2u);
    EXPECT_EQ(two.calls[0].name, "get_weather");
    EXPECT_EQ(two.calls[0].arguments, "{\"city\": \"Paris\"}");
    EXPECT_EQ(two.calls[1].name, "now");
    EXPECT_EQ(two.calls[1].arguments, "{}");
    EXPECT_EQ(two.content, "");

    Checker single({t, "", f.parser, false});
    EXPECT_TRUE(single.accepts(f.one));
    EXPECT_FALSE(single.accepts(f.two));

    Checker named({t, "now", f.parser, true});
    EXPECT_FALSE(named.accepts(f.one));
  }
}

// tool_choice auto with a strict tool (get_weather; now is not strict): any text, but what the
// format's marker opens is a valid block of calls; the strict tool's arguments follow its
// schema, the other's are any JSON object.
TEST(ToolConstraint, AutoWithStrictTools) {
  auto t = tools();
  t[0].strict = true;
  EXPECT_TRUE(has_strict_tool(t));
  for (const FormatCase& f : format_cases()) {
    SCOPED_TRACE(f.parser);
    if (f.parser == "llama3" || f.parser == "gpt-oss" || f.parser == kJsonArrayToolCalls) {
      EXPECT_EQ(auto_tool_call_grammar({t, "", f.parser, true}).status().code(),
                StatusCode::kUnimplemented);
      continue;
    }
    Checker parallel({t, "", f.parser, true}, auto_tool_call_grammar);
    EXPECT_TRUE(parallel.accepts(""));
    EXPECT_TRUE(parallel.accepts("The weather is fine; no call needed."));
    EXPECT_TRUE(parallel.accepts(f.one));
    EXPECT_TRUE(parallel.accepts("Let me check. " + f.one + " Then more text. " + f.two));
    EXPECT_FALSE(parallel.accepts("Let me check. " + f.wrong_name));
    EXPECT_FALSE(parallel.accepts("Let me check. " + f.bad_args));
    // The marker alone, or a call cut short, is not a finished output.
    EXPECT_FALSE(parallel.accepts(f.one.substr(0, f.one.size() - 1)));
    // now() is not strict: any JSON object as its arguments (qwen3_coder: any parameters).
    std::string loose = f.two;
    if (f.parser == "qwen3_coder") {
      const std::string head = "<function=now>\n";
      loose.insert(loose.rfind(head) + head.size(), "<parameter=x>\n[1, 2]\n</parameter>\n");
    } else {
      const size_t empty_args = loose.rfind("{}");
      ASSERT_NE(empty_args, std::string::npos);
      loose.replace(empty_args, 2, "{\"x\": [1, 2]}");
    }
    EXPECT_TRUE(parallel.accepts(loose));
    // Free text never holds what the parser would read as a call without the trigger.
    if (f.parser.starts_with("deepseek")) {
      EXPECT_FALSE(parallel.accepts("ok <｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{}"));
    }

    Checker single({t, "", f.parser, false}, auto_tool_call_grammar);
    EXPECT_TRUE(single.accepts("Sure. " + f.one));
    EXPECT_FALSE(single.accepts(f.two));
    EXPECT_FALSE(single.accepts(f.one + " and more"));
  }
}

TEST(ToolConstraint, AutoLeavesReasoningFree) {
  auto t = tools();
  t[0].strict = true;
  const std::string call =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>";
  const std::string musing = "maybe <tool_call> get_weather? </think>";
  Checker may({t, "", "qwen25", true, ThinkingStart::kMayOpen}, auto_tool_call_grammar);
  EXPECT_TRUE(may.accepts("<think>" + musing + "\n\n" + call));
  EXPECT_TRUE(may.accepts("\n <think>" + musing + call));  // the parser skips the whitespace too
  EXPECT_TRUE(may.accepts(call));
  EXPECT_FALSE(may.accepts("<think>ok</think> <tool_call> get_weather"));
  Checker open({t, "", "qwen25", true, ThinkingStart::kOpen}, auto_tool_call_grammar);
  EXPECT_TRUE(open.accepts(musing + call));
  EXPECT_FALSE(open.accepts("</think><tool_call> nope"));
  Checker none({t, "", "qwen25", true}, auto_tool_call_grammar);
  EXPECT_FALSE(none.accepts("<think>" + musing + call));
}

// Qwen3-Coder's parameters: raw text where the parser reads a string (an enum's strings
// only), the JSON of the schema otherwise; required ones always, in the schema's order; nothing
// in a value that would end it early; string constraints it cannot hold are refused.
TEST(ToolConstraint, Qwen3CoderParameters) {
  auto t = read_function_tools(R"([{"type": "function", "function": {"name": "f", "parameters":
      {"type": "object", "properties": {"note": {"type": "string", "description": "any"},
       "n": {"type": "integer", "minimum": 1}, "tags": {"type": "array", "items":
       {"$ref": "#/$defs/tag"}}, "mode": {"enum": ["fast", "slow"]}}, "required": ["n"],
       "$defs": {"tag": {"type": "string", "maxLength": 3}}}}}])");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  const auto call = [](const std::string& params) {
    return "<tool_call>\n<function=f>\n" + params + "</function>\n</tool_call>";
  };
  const auto param = [](const std::string& name, const std::string& value) {
    return "<parameter=" + name + ">\n" + value + "\n</parameter>\n";
  };
  Checker c({*t, "", "qwen3_coder", false});
  EXPECT_TRUE(c.accepts(call(param("n", "3"))));
  EXPECT_TRUE(c.accepts(call(param("note", "two\nlines <b>") + param("n", "3") +
                             param("tags", "[\"a\", \"bcd\"]") + param("mode", "slow"))));
  EXPECT_FALSE(c.accepts(call(param("note", "x"))));                    // n is required
  EXPECT_FALSE(c.accepts(call(param("n", "0"))));                       // minimum 1
  EXPECT_FALSE(c.accepts(call(param("n", "3") + param("note", "x"))));  // the schema's order
  EXPECT_FALSE(c.accepts(call(param("n", "3") + param("tags", "[\"abcd\"]"))));  // $defs held
  EXPECT_FALSE(c.accepts(call(param("n", "3") + param("mode", "medium"))));
  EXPECT_FALSE(c.accepts(call(param("note", "a</function>b") + param("n", "3"))));
  EXPECT_FALSE(c.accepts(call(param("note", "a<parameter=n>b") + param("n", "3"))));
  EXPECT_FALSE(c.accepts(call(param("n", "3") + param("other", "x"))));
  // A JSON value's strings hold '<' only escaped: the parser ends the value at the first
  // "</parameter>" (or "<parameter=", "</function>") even inside a JSON string.
  EXPECT_FALSE(c.accepts(call(param("n", "3") + param("tags", "[\"a<b\"]"))));
  EXPECT_TRUE(c.accepts(call(param("n", "3") + param("tags", "[\"\\u003c/\"]"))));
  const FunctionTool object = {
      "h", R"({"type": "object", "properties": {"o": {"type": "object", "properties": {"s":
          {"type": "string"}}}}})",
      false};
  Checker nested({{&object, 1}, "", "qwen3_coder", true});
  const auto o_call = [&](const std::string& json) {
    return "<tool_call>\n<function=h>\n" + param("o", json) + "</function>\n</tool_call>";
  };
  for (const char* marker : {"</parameter>", "</function>", "<parameter=o>"}) {
    EXPECT_FALSE(nested.accepts(o_call("{\"s\": \"a" + std::string(marker) + "b\"}"))) << marker;
  }
  EXPECT_TRUE(nested.accepts(o_call("{\"s\": \"a\\u003c/parameter>b\"}")));
  // The parser reads back what the grammar allows, typed by the same schema.
  auto parser = make_output_parser({"qwen3_coder", "", false, xml_parameter_kinds(*t)});
  const ParsedOutput parsed =
      parse_whole(**parser, call(param("note", "hi") + param("n", "3") + param("tags", "[\"a\"]")));
  ASSERT_EQ(parsed.calls.size(), 1u);
  EXPECT_EQ(parsed.calls[0].arguments, "{\"note\": \"hi\", \"n\": 3, \"tags\": [\"a\"]}");
  const FunctionTool objects[] = {object};
  auto o_parser = make_output_parser({"qwen3_coder", "", false, xml_parameter_kinds(objects)});
  const ParsedOutput escaped = parse_whole(**o_parser, o_call("{\"s\": \"a\\u003c/parameter>b\"}"));
  ASSERT_EQ(escaped.calls.size(), 1u);
  EXPECT_EQ(escaped.calls[0].arguments, "{\"o\": {\"s\": \"a</parameter>b\"}}");

  // A string enum the parser would cut short: refused.
  const FunctionTool marked = {
      "h", R"({"type": "object", "properties": {"v": {"enum": ["a</parameter>b", "c"]}}})", false};
  EXPECT_EQ(tool_call_grammar({{&marked, 1}, "", "qwen3_coder", true}).status().code(),
            StatusCode::kUnimplemented);

  auto dated = read_function_tools(R"([{"type": "function", "function": {"name": "g",
      "parameters": {"type": "object", "properties": {"when": {"type": "string",
      "format": "date"}}}}}])");
  ASSERT_TRUE(dated.ok());
  const auto refused = tool_call_grammar({*dated, "", "qwen3_coder", true});
  EXPECT_EQ(refused.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(refused.status().message().find("'when'"), std::string::npos);
  // Several types (one conversion cannot serve them), unions without properties: refused;
  // a bare object schema takes any parameters.
  for (const char* params :
       {R"({"type": "object", "properties": {"v": {"type": ["integer", "number"]}}})",
        R"({"type": "object", "properties": {"v": {"anyOf": [{"type": "integer"},
              {"type": "boolean"}]}}})",
        R"({"type": "object", "additionalProperties": {"type": "integer"}})",
        R"({"anyOf": [{"type": "object"}]})",
        R"({"type": "object", "properties": {"m": {"anyOf": [{"$ref": "#/$defs/M"},
           {"type": "null"}]}}, "$defs": {"M": {"type": "object"}}})"}) {
    const FunctionTool tool = {"h", params, false};
    EXPECT_EQ(tool_call_grammar({{&tool, 1}, "", "qwen3_coder", true}).status().code(),
              StatusCode::kUnimplemented)
        << params;
  }
  const FunctionTool bare = {"h", R"({"type": "object"})", false};
  Checker any({{&bare, 1}, "", "qwen3_coder", true});
  EXPECT_TRUE(
      any.accepts("<tool_call>\n<function=h>\n<parameter=q>\nfree text\n</parameter>\n"
                  "</function>\n</tool_call>"));
  // A function without arguments (strict mode's additionalProperties false): no parameters.
  const FunctionTool none = {"h", R"({"type": "object", "additionalProperties": false})", false};
  Checker no_args({{&none, 1}, "", "qwen3_coder", true});
  EXPECT_TRUE(no_args.accepts("<tool_call>\n<function=h>\n</function>\n</tool_call>"));
  EXPECT_FALSE(no_args.accepts(
      "<tool_call>\n<function=h>\n<parameter=q>\nx\n</parameter>\n</function>\n</tool_call>"));
  // A branch whose type is a list (no throw; several types: refused).
  const FunctionTool listed = {
      "h", R"({"type": "object", "properties": {"v": {"anyOf": [{"type": ["integer", "null"]}]}}})",
      false};
  EXPECT_TRUE(tool_call_grammar({{&listed, 1}, "", "qwen3_coder", true}).ok());
  const FunctionTool nullable = {
      "h", R"({"type": "object", "properties": {"v": {"type": ["integer", "null"]}}})", false};
  Checker maybe({{&nullable, 1}, "", "qwen3_coder", true});
  EXPECT_TRUE(maybe.accepts(
      "<tool_call>\n<function=h>\n<parameter=v>\nnull\n</parameter>\n</function>\n</tool_call>"));
  // Free text under tool_choice auto may not open a call without <tool_call>.
  auto strict = *t;
  strict[0].strict = true;
  Checker free({strict, "", "qwen3_coder", true}, auto_tool_call_grammar);
  EXPECT_TRUE(free.accepts("Sure. " + call(param("n", "2"))));
  EXPECT_FALSE(free.accepts("Sure. <function=f>\n</function>"));
}

TEST(ToolConstraint, Errors) {
  const auto t = tools();
  auto unknown = tool_call_grammar({t, "get_time", "qwen25", true});
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("get_time"), std::string::npos);
  EXPECT_EQ(tool_call_grammar({{}, "", "qwen25", true}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(tool_call_grammar({t, "", "pythonic", true}).status().code(),
            StatusCode::kUnimplemented);
  // Where no grammar writes the server's format, forced calls are SGLang's JSON array.
  EXPECT_EQ(required_calls_parser("pythonic"), kJsonArrayToolCalls);
  EXPECT_EQ(required_calls_parser(""), kJsonArrayToolCalls);
  EXPECT_EQ(required_calls_parser("qwen25"), "qwen25");
  EXPECT_EQ(required_calls_parser("gpt-oss"), "gpt-oss");
  EXPECT_EQ(call_marker(kJsonArrayToolCalls), "");
  EXPECT_EQ(tool_call_grammar({t, "", "no-such-parser", true}).status().code(),
            StatusCode::kInvalidArgument);
}

// A schema the grammar engine does not support is read (the template shows it, calls to it are
// parsed) and refused, naming the function, only where a grammar would hold the calls to it.
TEST(FunctionTools, UnsupportedSchemasFailOnlyWhereAGrammarHoldsThem) {
  auto read = read_function_tools(
      R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
          "properties": {"n": {"type": "number", "multipleOf": 3}}}}},
          {"type": "function", "function": {"name": "g", "parameters": {"type": "object"}}}])");
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  std::vector<FunctionTool> t = std::move(read).value();
  for (const char* parser : {"qwen25", "qwen3_coder"}) {
    SCOPED_TRACE(parser);
    auto required = tool_call_grammar({t, "", parser, true});
    ASSERT_FALSE(required.ok());
    EXPECT_EQ(required.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(required.status().message().find("'f'"), std::string::npos)
        << required.status().message();
    EXPECT_NE(required.status().message().find("multipleOf"), std::string::npos)
        << required.status().message();
    // Naming the other function, or auto with f not strict: f's schema is not compiled.
    EXPECT_TRUE(tool_call_grammar({t, "g", parser, true}).ok());
    EXPECT_TRUE(auto_tool_call_grammar({t, "", parser, true}).ok());
    t[0].strict = true;
    EXPECT_EQ(auto_tool_call_grammar({t, "", parser, true}).status().code(),
              StatusCode::kInvalidArgument);
    t[0].strict = false;
  }
}

TEST(FunctionTools, Validation) {
  EXPECT_FALSE(
      read_function_tools(R"([{"type": "function", "function": {"name": "f", "parameters": 3}}])")
          .ok());
  EXPECT_FALSE(read_function_tools(R"([{"type": "function", "function": {}}])").ok());
  EXPECT_FALSE(read_function_tools(R"([{"type": "web_search"}])").ok());
  EXPECT_FALSE(read_function_tools(
                   R"([{"type": "function", "function": {"name": "a"}},
                       {"type": "function", "function": {"name": "a"}}])")
                   .ok());
  EXPECT_FALSE(read_function_tools(R"({"type": "function"})").ok());
  // The Responses API's flat form.
  auto flat = read_function_tools(
      R"([{"type": "function", "name": "g", "parameters": {"type": "object"}}])");
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ((*flat)[0].name, "g");
  EXPECT_FALSE((*flat)[0].strict);
  // strict: a boolean or null (SGLang's default, false).
  auto strict = read_function_tools(
      R"([{"type": "function", "function": {"name": "a", "strict": true}},
          {"type": "function", "function": {"name": "b", "strict": null}}])");
  ASSERT_TRUE(strict.ok()) << strict.status().to_string();
  EXPECT_TRUE((*strict)[0].strict);
  EXPECT_FALSE((*strict)[1].strict);
  auto bad_strict =
      read_function_tools(R"([{"type": "function", "function": {"name": "a", "strict": "yes"}}])");
  ASSERT_FALSE(bad_strict.ok());
  EXPECT_NE(bad_strict.status().message().find("tools[0].function.strict"), std::string::npos);
}

}  // namespace
}  // namespace sgl::function_call
