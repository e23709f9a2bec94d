// Tool-call and reasoning parsers: exact results per format, and the streaming property — every
// split of an output into two chunks, and many random multi-chunk splits, fold to the same
// content, reasoning and calls as the whole text fed at once.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "function_call/output_parser.h"
#include "function_call/qwen3_coder_parser.h"

namespace sgl::function_call {
namespace {

struct Case {
  std::string tools;
  std::string reasoning;
  bool force = false;
  std::string text;
  ParsedOutput want;
  std::vector<FunctionTool> functions = {};  // the request's tools (qwen3_coder's value types)
};

std::unique_ptr<StreamParser> make(const Case& c) {
  OutputParserOptions options{c.tools, c.reasoning, c.force, xml_parameter_kinds(c.functions)};
  if (!c.functions.empty()) options.tool_names = tool_names(c.functions);
  auto p = make_output_parser(options);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return std::move(p).value();
}

ParsedOutput chunked(const Case& c, const std::vector<size_t>& cuts) {
  auto parser = make(c);
  EventSink sink;
  size_t from = 0;
  std::vector<ParseEvent> events;
  for (size_t cut : cuts) {
    parser->feed(std::string_view(c.text).substr(from, cut - from), sink);
    for (ParseEvent& e : sink.take()) events.push_back(std::move(e));
    from = cut;
  }
  parser->feed(std::string_view(c.text).substr(from), sink);
  parser->finish(sink);
  for (ParseEvent& e : sink.take()) events.push_back(std::move(e));
  // Call indices are consecutive and each begin comes before its arguments.
  int32_t calls = 0;
  for (const ParseEvent& e : events) {
    if (e.kind == EventKind::kToolCallBegin) EXPECT_EQ(e.call_index, calls++);
    if (e.kind == EventKind::kToolCallArguments) EXPECT_EQ(e.call_index, calls - 1);
  }
  return fold(events);
}

std::string show(const ParsedOutput& o) {
  std::string s = "content=[" + o.content + "] reasoning=[" + o.reasoning + "]";
  for (const ToolCall& c : o.calls) s += " call " + c.name + "(" + c.arguments + ")";
  return s;
}

void check(const Case& c) {
  SCOPED_TRACE("tools=" + c.tools + " reasoning=" + c.reasoning + " text=" + c.text);
  const ParsedOutput whole = chunked(c, {});
  EXPECT_EQ(whole, c.want) << "got  " << show(whole) << "\nwant " << show(c.want);
  for (size_t cut = 0; cut <= c.text.size(); ++cut) {
    const ParsedOutput two = chunked(c, {cut});
    ASSERT_EQ(two, whole) << "split at " << cut << ": " << show(two);
  }
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<size_t> cuts;
    std::uniform_int_distribution<size_t> pos(0, c.text.size());
    const int n = 1 + trial % 12;
    for (int i = 0; i < n; ++i) cuts.push_back(pos(rng));
    std::sort(cuts.begin(), cuts.end());
    ASSERT_EQ(chunked(c, cuts), whole) << "trial " << trial;
  }
  // Byte by byte.
  std::vector<size_t> every;
  for (size_t i = 1; i < c.text.size(); ++i) every.push_back(i);
  ASSERT_EQ(chunked(c, every), whole);
}

ParsedOutput out(std::string content, std::vector<ToolCall> calls = {},
                 std::string reasoning = "") {
  return {std::move(content), std::move(reasoning), std::move(calls)};
}

TEST(ToolCallParser, Qwen25) {
  const std::string t = "qwen25";
  check({t, "", false, "Hello, world!", out("Hello, world!")});
  check({t, "", false,
         "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
         "\"Paris\"}}\n</tool_call>",
         out("", {{"get_weather", "{\"city\": \"Paris\"}"}})});
  check({t, "", false,
         "Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": [1, 2.5e3, true, "
         "null]}}\n</tool_call>\n"
         "<tool_call>\n{\"arguments\": {}, \"name\": \"b\"}\n</tool_call>",
         out("Let me check.", {{"a", "{\"x\": [1, 2.5e3, true, null]}"}, {"b", "{}"}})});
  check(
      {t, "", false, "<tool_call>{\"name\": \"f\"}</tool_call> done", out("done", {{"f", "{}"}})});
  // Text around two calls in a row is joined by the gap before the first.
  check({t, "", false,
         "a <tool_call>{\"name\": \"f\"}</tool_call>\n<tool_call>{\"name\": \"g\"}</tool_call> b",
         out("a b", {{"f", "{}"}, {"g", "{}"}})});
  // Not a call: the markup is content.
  check({t, "", false, "a <tool_call>oops</tool_call> b", out("a <tool_call>oops</tool_call> b")});
  check({t, "", false, "<tool_call>{\"x\": 1}</tool_call>",
         out("<tool_call>{\"x\": 1}</tool_call>")});
  check({t, "", false, "a <tool_ b", out("a <tool_ b")});
  check({t, "", false, "ends with <tool_c", out("ends with <tool_c")});
  // Unfinished call: it keeps what it got.
  check({t, "", false, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"ab",
         out("", {{"f", "{\"q\": \"ab"}})});
  // A block whose JSON breaks once the call began: the call keeps what it got, the rest of the
  // block is dropped up to </tool_call> (SGLang skips the block; none of it is content).
  check({t, "", false,
         "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"city\": \"Paris\"}\n</tool_call> after",
         out("after", {{"f", "{\"city\": \"Paris\"}"}})});
  check({t, "", false,
         "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"city\": \"Paris\"}}}\n</tool_call>",
         out("", {{"f", "{\"city\": \"Paris\"}"}})});
  check({t, "", false, "<tool_call>{\"name\": \"f\"} trailing words", out("", {{"f", "{}"}})});
  // Several call objects in one block.
  check({t, "", false,
         "<tool_call>\n{\"name\":\"a\",\"arguments\":{}}\n{\"name\":\"b\",\"arguments\":{}}"
         "\n</tool_call>",
         out("", {{"a", "{}"}, {"b", "{}"}})});
  // Unicode in content and arguments; escapes in the name.
  check({t, "", false,
         "héllo ☃ <tool_call>{\"name\": \"g\\u00e9\", \"arguments\": {\"s\": "
         "\"日本\\\"\"}}</tool_call>",
         out("héllo ☃", {{"gé", "{\"s\": \"日本\\\"\"}"}})});
  check({"qwen", "", false, "x", out("x")});
}

TEST(ToolCallParser, Llama3) {
  const std::string t = "llama3";
  check({t, "", false, "{\"name\": \"f\", \"parameters\": {\"a\": 1}}",
         out("", {{"f", "{\"a\": 1}"}})});
  check({t, "", false,
         " <|python_tag|>{\"name\": \"f\", \"parameters\": {}}; {\"name\": \"g\", \"arguments\": "
         "{\"b\": \"x\"}}",
         out("", {{"f", "{}"}, {"g", "{\"b\": \"x\"}"}})});
  check({t, "", false, "Sure. <|python_tag|>{\"name\": \"f\", \"parameters\": {\"n\": -0.5}}",
         out("Sure.", {{"f", "{\"n\": -0.5}"}})});
  check({t, "", false, "{\"answer\": 42}", out("{\"answer\": 42}")});
  // <|python_tag|> is a special token: not content, also before a built-in tool's Python.
  check({t, "", false, "<|python_tag|>brave_search.call(query=\"x\")",
         out("brave_search.call(query=\"x\")")});
  check({t, "", false, "The set {1, 2}", out("The set {1, 2}")});
  check({t, "", false, "{\"name\": \"f\", \"parameters\": {\"a\": 1}} trailing",
         out("trailing", {{"f", "{\"a\": 1}"}})});
  // Calls one per line (SGLang reads objects whatever separates them).
  check({t, "", false,
         "<|python_tag|>{\"name\": \"f\", \"parameters\": {}}\n{\"name\": \"g\", \"parameters\": "
         "{}}\n",
         out("", {{"f", "{}"}, {"g", "{}"}})});
  check({t, "", false, "{\"name\": \"f\", \"parameters\": {}} {\"x\": 1}",
         out("{\"x\": 1}", {{"f", "{}"}})});
}

// With the request's functions known, a call to another name after a marker is dropped, markup
// and arguments, and the calls after it are read (SGLang drops calls to undefined functions); a
// bare JSON object naming one stays content: llama3's JSON answer stays the answer.
TEST(ToolCallParser, JsonCallsNameTheRequestsFunctions) {
  const std::vector<FunctionTool> weather = {{"get_weather", "", false}};
  const auto with = [&](const std::string& tools, std::string text, ParsedOutput want) {
    check({tools, "", false, std::move(text), std::move(want), weather});
  };
  with("llama3", "{\"name\": \"Paris\", \"population\": 2100000}",
       out("{\"name\": \"Paris\", \"population\": 2100000}"));
  with("llama3", "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
       out("", {{"get_weather", "{\"city\": \"Paris\"}"}}));
  // Arguments before the name are held until the name is known.
  with("llama3", "{\"parameters\": {\"x\": 1}, \"name\": \"other\"}",
       out("{\"parameters\": {\"x\": 1}, \"name\": \"other\"}"));
  with("qwen25", "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>", out(""));
  with("qwen25",
       "A <tool_call>\n{\"name\": \"other\", \"arguments\": {\"q\": \"}{\"}}\n</tool_call>\n"
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"X\"}}\n"
       "</tool_call> B",
       out("A B", {{"get_weather", "{\"city\": \"X\"}"}}));
  // llama3: calls after <|python_tag|> go on past one to another function.
  with("llama3",
       "<|python_tag|>{\"name\": \"other\", \"parameters\": {\"a\": [1, {}]}}; "
       "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"X\"}}",
       out("", {{"get_weather", "{\"city\": \"X\"}"}}));
  with("llama3",
       "<|python_tag|>{\"parameters\": {}, \"name\": \"other\"}\n"
       "{\"name\": \"get_weather\", \"parameters\": {}} after",
       out("after", {{"get_weather", "{}"}}));
  // A dropped call whose JSON breaks: what follows is text again.
  with("llama3", "<|python_tag|>{\"name\": \"other\", \"parameters\": {]} tail", out("]} tail"));
  with("qwen25", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>",
       out("", {{"get_weather", "{}"}}));
  with("mistral", "[TOOL_CALLS]other[ARGS]{\"a\": 1}[TOOL_CALLS]get_weather[ARGS]{}",
       out("", {{"get_weather", "{}"}}));
  with("mistral", "[TOOL_CALLS]get_weather[ARGS]{}", out("", {{"get_weather", "{}"}}));
  with("mistral",
       "[TOOL_CALLS] [{\"name\": \"other\", \"arguments\": {}}, {\"name\": \"get_weather\", "
       "\"arguments\": {}}]",
       out("", {{"get_weather", "{}"}}));
  // So do the formats that read whole calls before their names can be told from text.
  with("pythonic", "Write it as [dict(a=1), get_weather(city='X')] then",
       out("Write it as then", {{"get_weather", "{\"city\": \"X\"}"}}));
  with("pythonic", "[dict(a=1)]", out(""));
  with("deepseekv3",
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>other\n```json\n{\"a\": "
       "1}\n```<｜tool▁call▁end｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```"
       "json\n{}"
       "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
       out("", {{"get_weather", "{}"}}));
  with("gpt-oss",
       "<|start|>assistant to=browser.search<|channel|>commentary json<|message|>{\"q\": "
       "1}<|call|><|start|>assistant to=functions.get_weather<|channel|>commentary "
       "json<|message|>{}<|call|>",
       out("", {{"get_weather", "{}"}}));
}

TEST(ToolCallParser, Mistral) {
  const std::string t = "mistral";
  check({t, "", false,
         "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {\"a\": 1}}, {\"name\": \"g\", "
         "\"arguments\": {}}]",
         out("", {{"f", "{\"a\": 1}"}, {"g", "{}"}})});
  check({t, "", false, "ok [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"s\": \"]\"}}]",
         out("ok", {{"f", "{\"s\": \"]\"}"}})});
  check({t, "", false, "[TOOL_CALLS] nope", out("[TOOL_CALLS] nope")});
  // The compact form of newer templates: each call behind its own marker, a call id allowed.
  check({t, "", false, "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}",
         out("", {{"get_weather", "{\"city\": \"Paris\"}"}})});
  check({t, "", false,
         "Sure. [TOOL_CALLS]f[ARGS]{\"a\": [1, \"]\"]}\n[TOOL_CALLS]g[CALL_ID]c0ffee42[ARGS] {} "
         "done",
         out("Sure. done", {{"f", "{\"a\": [1, \"]\"]}"}, {"g", "{}"}})});
  // A name is a function's name: prose after the marker is content, and the next marker starts
  // a call.
  check({t, "", false, "[TOOL_CALLS]Let me check [TOOL_CALLS]get_weather[ARGS]{}",
         out("[TOOL_CALLS]Let me check", {{"get_weather", "{}"}})});
  check({t, "", false, "a [TOOL_CALLS]f[ARGS]{} [TOOL_CALLS]g",
         out("a [TOOL_CALLS]g", {{"f", "{}"}})});
  check({t, "", false, "[TOOL_CALLS]f[ARGZ]{}", out("[TOOL_CALLS]f[ARGZ]{}")});
  check({t, "", false, "[TOOL_CALLS]f[ARGS]oops", out("[TOOL_CALLS]f[ARGS]oops")});
  check({t, "", false, "[TOOL_CALLS] [ARGS]{}", out("[TOOL_CALLS] [ARGS]{}")});
  check({t, "", false, "[TOOL_CALLS]f\n[ARGS]{}", out("[TOOL_CALLS]f\n[ARGS]{}")});
  check({t, "", false, "[TOOL_CALLS]f [ARGS]{}", out("[TOOL_CALLS]f [ARGS]{}")});
  check({t, "", false, "[TOOL_CALLS]f[ARGS]{\"q\": \"ab", out("", {{"f", "{\"q\": \"ab"}})});
  check({t, "", false, "[TOOL_CALLS]f[CALL_ID]x", out("[TOOL_CALLS]f[CALL_ID]x")});
  check(
      {t, "", false, "[TOOL_CALLS] {\"name\": \"f\", \"arguments\": {}}", out("", {{"f", "{}"}})});
  check({t, "", false, "[1, 2] [TOOL_", out("[1, 2] [TOOL_")});
}

// The bare array tool_choice required / named holds calls to where a grammar cannot write the
// server's format (kJsonArrayToolCalls): calls from the first byte, "parameters" (or
// "arguments"), one object too; anything else is content.
TEST(ToolCallParser, JsonArray) {
  const std::string t(kJsonArrayToolCalls);
  check({t, "", false,
         "[{\"name\": \"f\", \"parameters\": {\"a\": [1, \"]\"]}}, {\"name\": \"g\", "
         "\"parameters\": {}}]",
         out("", {{"f", "{\"a\": [1, \"]\"]}"}, {"g", "{}"}})});
  check({t, "", false, "\n [{\"parameters\": {\"x\": null}, \"name\": \"f\"}]\n",
         out("", {{"f", "{\"x\": null}"}})});
  check({t, "", false, "{\"name\": \"f\", \"arguments\": {}}", out("", {{"f", "{}"}})});
  // Cut short: the call whose name was read keeps what it got.
  check({t, "", false, "[{\"name\": \"f\", \"parameters\": {\"q\": \"ab",
         out("", {{"f", "{\"q\": \"ab"}})});
  check({t, "", false, "[{\"nam", out("[{\"nam")});
  // Not calls: text, an empty array, an array of other things, an array after text.
  check({t, "", false, "Hello [1]", out("Hello [1]")});
  check({t, "", false, "[]", out("[]")});
  check({t, "", false, "[1, 2]", out("[1, 2]")});
  check({t, "", false, "ok [{\"name\": \"f\", \"parameters\": {}}]",
         out("ok [{\"name\": \"f\", \"parameters\": {}}]")});
  EXPECT_FALSE(check_tool_call_parser(t).ok());  // not a --tool-call-parser name
}

TEST(ToolCallParser, Pythonic) {
  const std::string t = "pythonic";
  check({t, "", false, "[get_weather(city='Paris', days=3), get_time()]",
         out("", {{"get_weather", "{\"city\": \"Paris\", \"days\": 3}"}, {"get_time", "{}"}})});
  check({t, "", false, "Calling: [f(a=True, b=None, c=[1, (2, 3)], d={'k': \"v'\"}, e=-1.5e2)] ok",
         out("Calling: ok", {{"f",
                              "{\"a\": true, \"b\": null, \"c\": [1, [2, 3]], \"d\": {\"k\": "
                              "\"v'\"}, \"e\": -1.5e2}"}})});
  check({t, "", false, "[f(s='say \"hi\"\\n', t=\"\\x41\",)]",
         out("", {{"f", "{\"s\": \"say \\\"hi\\\"\\n\", \"t\": \"\\u0041\"}"}})});
  check({t, "", false, "see [1] and [note] and [f(1)]", out("see [1] and [note] and [f(1)]")});
  check({t, "", false, "[f(a=1), g(", out("g(", {{"f", "{\"a\": 1}"}})});
  check({t, "", false, "[f(a='日本')]", out("", {{"f", "{\"a\": \"日本\"}"}})});
  check({t, "", false, "[f(a=1", out("[f(a=1")});
  // Llama 4's list markers are dropped (SGLang's _text_strip).
  check({t, "", false, "<|python_start|>[get_weather(city=\"SF\")]<|python_end|>",
         out("", {{"get_weather", "{\"city\": \"SF\"}"}})});
}

TEST(ToolCallParser, Qwen3Coder) {
  const std::string t = "qwen3_coder";
  const std::vector<FunctionTool> functions = {
      {"f",
       R"({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type":
           "integer"}, "temp": {"type": "number"}, "ok": {"type": "boolean"}, "tags": {"type":
           "array"}, "opts": {"type": "object"}, "when": {"type": ["null", "string"]},
           "unit": {"enum": ["c", "f"]}, "level": {"anyOf": [{"type": "integer"},
           {"type": "null"}]}}})",
       false},
      {"now", "", false}};
  const auto call = [](std::string name, std::string params) {
    return "<tool_call>\n<function=" + name + ">\n" + params + "</function>\n</tool_call>";
  };
  const auto param = [](std::string name, std::string value) {
    return "<parameter=" + name + ">\n" + value + "\n</parameter>\n";
  };
  check({t, "", false, "Hello <b>world</b> <tool_", out("Hello <b>world</b> <tool_")});
  check({t, "", false,
         "I'll check.\n" +
             call("f", param("city", "New York") + param("days", " 3 ") + param("temp", "2.50") +
                           param("ok", "True") + param("tags", "[\"a\", 1]") +
                           param("opts", "{'k': None, 'n': (1, 2)}") + param("when", "null") +
                           param("unit", "c") + param("level", "7")),
         out("I'll check.", {{"f",
                              "{\"city\": \"New York\", \"days\": 3, \"temp\": 2.5, \"ok\": true, "
                              "\"tags\": [\"a\", 1], \"opts\": {\"k\": null, \"n\": [1, 2]}, "
                              "\"when\": null, \"unit\": \"c\", \"level\": 7}"}}),
         functions});
  // What does not convert stays a string; other parameters, other functions: strings.
  check({t, "", false,
         call("f", param("days", "three") + param("temp", "1e3") + param("ok", "yes") +
                       param("opts", "{bad") + param("extra", "42") + param("city", "NULL")) +
             call("g", param("n", "5")),
         out("", {{"f",
                   "{\"days\": \"three\", \"temp\": 1000.0, \"ok\": false, \"opts\": "
                   "\"{bad\", \"extra\": \"42\", \"city\": null}"},
                  {"g", "{\"n\": \"5\"}"}}),
         functions});
  // Multi-line values keep their inner lines; a value also ends at the next parameter or at
  // </function>; no parameters is {}; text after the calls is content.
  check({t, "", false,
         "<tool_call>\n<function=f>\n<parameter=city>\nline 1\n\nline <2>\n"
         "<parameter=days>\n4</function>\n</tool_call>\n" +
             call("now", "") + "\nDone.",
         out("Done.", {{"f", "{\"city\": \"line 1\\n\\nline <2>\", \"days\": 4}"}, {"now", "{}"}}),
         functions});
  // A function without <tool_call> (as SGLang's streaming reads it); markup that is not a call.
  check({t, "", false, "a <function=now>\n</function> b", out("a b", {{"now", "{}"}})});
  check({t, "", false, "a <function=bad\nname> b", out("a <function=bad\nname> b")});
  check({t, "", false, "x <function=f", out("x <function=f")});
  check({t, "", false, "x <tool_call>\n<function=f", out("x")});
  // Cut short: the call keeps what it got, its arguments closed.
  check({t, "", false, "<tool_call>\n<function=f>\n<parameter=city>\nPar</param",
         out("", {{"f", "{\"city\": \"Par</param\"}"}}), functions});
  check({t, "", false, "<tool_call>\n<function=f>\n<parameter=ci", out("", {{"f", "{}"}})});
  check({"hermes", "", false, "<tool_call>{\"name\": \"f\"}</tool_call>", out("", {{"f", "{}"}})});
}

TEST(ToolCallParser, Qwen3CoderValues) {
  using K = XmlValueKind;
  EXPECT_EQ(xml_value_to_json("007", K::kInteger), "7");
  EXPECT_EQ(xml_value_to_json("-0", K::kInteger), "0");
  EXPECT_EQ(xml_value_to_json("+1_000", K::kInteger), "1000");
  EXPECT_EQ(xml_value_to_json("1__0", K::kInteger), "\"1__0\"");
  EXPECT_EQ(xml_value_to_json("12", K::kNumber), "12");
  EXPECT_EQ(xml_value_to_json(".5", K::kNumber), "0.5");
  EXPECT_EQ(xml_value_to_json("-2.", K::kNumber), "-2.0");
  EXPECT_EQ(xml_value_to_json("inf", K::kNumber), "\"inf\"");
  EXPECT_EQ(xml_value_to_json("1e999", K::kNumber), "\"1e999\"");
  EXPECT_EQ(xml_value_to_json("TRUE", K::kBoolean), "true");
  EXPECT_EQ(xml_value_to_json("{\"a\":[1,{\"b\":\"日本\"}]}", K::kJson),
            "{\"a\": [1, {\"b\": \"日本\"}]}");
  EXPECT_EQ(xml_value_to_json("[1, 'x', True]", K::kJson), "[1, \"x\", true]");
  EXPECT_EQ(xml_value_to_json("{\"z\": 1, \"a\": 2}", K::kJson), "{\"z\": 1, \"a\": 2}");
  EXPECT_EQ(xml_value_to_json("(1, 2) x", K::kLiteral), "\"(1, 2) x\"");
  EXPECT_EQ(xml_value_to_json("say \"hi\"\n\x01", K::kString), "\"say \\\"hi\\\"\\n\\u0001\"");
  EXPECT_EQ(xml_value_kind(R"({"type": "INT64"})"), K::kInteger);
  EXPECT_EQ(xml_value_kind(R"({"type": "float"})"), K::kNumber);
  EXPECT_EQ(xml_value_kind(R"({"anyOf": [{"type": "integer"}, {"type": "string"}]})"), K::kString);
  EXPECT_EQ(xml_value_kind(R"({"oneOf": [{"type": "null"}, {"type": "boolean"}]})"), K::kBoolean);
  EXPECT_EQ(xml_value_kind(R"({"enum": [1, 2]})"), K::kInteger);
  EXPECT_EQ(xml_value_kind(R"({"allOf": [{"type": "string"}, {"items": {}}]})"), K::kJson);
  EXPECT_EQ(xml_value_kind(R"({"properties": {}})"), K::kJson);
  EXPECT_EQ(xml_value_kind(R"({"type": "null"})"), K::kLiteral);
  EXPECT_EQ(xml_value_kind(R"({"description": "no type"})"), K::kString);
  EXPECT_EQ(xml_value_kind("not json"), K::kString);
}

TEST(ToolCallParser, DeepSeekV3) {
  const std::string t = "deepseekv3";
  const std::string call1 =
      "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": "
      "\"Tokyo\"}\n```<｜tool▁call▁end｜>";
  const std::string call2 =
      "<｜tool▁call▁begin｜>function<｜tool▁sep｜>now\n```json\n{}\n```<｜tool▁call▁end｜>";
  check({t, "", false,
         "Checking.<｜tool▁calls▁begin｜>" + call1 + "\n" + call2 + "<｜tool▁calls▁end｜>",
         out("Checking.", {{"get_weather", "{\"city\": \"Tokyo\"}"}, {"now", "{}"}})});
  check({t, "", false,
         "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{\"a\": "
         "1}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
         out("", {{"f", "{\"a\": 1}"}})});
  check(
      {t, "", false, "plain <｜tool▁calls▁begin｜>junk", out("plain <｜tool▁calls▁begin｜>junk")});
  check({t, "", false, "<｜tool▁calls▁begin｜>" + call1.substr(0, call1.size() - 20),
         out("", {{"get_weather", "{\"city\": \"Tokyo\"}"}})});
  check({t, "", false, "a <｜tool", out("a <｜tool")});
}

TEST(ToolCallParser, GptOss) {
  const std::string t = "gpt-oss";
  check(
      {t, "gpt-oss", false,
       "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
       "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"SF\"}<|call|>",
       out("", {{"get_weather", "{\"city\":\"SF\"}"}}, "Need weather.")});
  check(
      {t, "gpt-oss", false,
       "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Hi "
       "there!<|return|>",
       out("Hi there!", {}, "Think.")});
  // Without a reasoning parser the analysis channel is dropped (SGLang's gpt-oss tool parser).
  check({t, "", false,
         "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>final<|message|>y",
         out("y")});
  check({"", "gpt-oss", false,
         "<|channel|>analysis<|message|>x<|end|><|start|>assistant "
         "to=functions.f<|channel|>commentary json<|message|>{}<|call|>",
         out("{}", {}, "x")});
  check({t, "gpt-oss", false, "plain text", out("plain text")});
  check({t, "gpt-oss", false,
         "<|start|>assistant to=functions.f<|channel|>commentary<|message|><|call|>",
         out("", {{"f", "{}"}})});
}

TEST(ReasoningParser, Think) {
  check({"", "qwen3", false, "<think>\nSome thought.\n</think>\n\nThe answer.",
         out("The answer.", {}, "Some thought.")});
  check({"", "qwen3", false, "No thinking here.", out("No thinking here.")});
  check({"", "qwen3", true, "Thought.\n</think>\n\nAnswer", out("Answer", {}, "Thought.")});
  check({"", "deepseek-r1", false, "Thought only, never closed",
         out("", {}, "Thought only, never closed")});
  check({"", "deepseek-r1", false, "<think>a</think>b", out("b", {}, "a")});
  check({"", "qwen3", false, "  <thin", out("  <thin")});
  check({"", "qwen3", false, "<think>x < y </thinking> </think>ok",
         out("ok", {}, "x < y </thinking>")});
  check({"", "qwen3", false, "a <think>b</think>", out("a <think>b</think>")});
  check({"", "qwen3-thinking", false, "r</think>c", out("c", {}, "r")});
  // mistral (Magistral): [THINK]...[/THINK], reasoning only when the output opens it.
  check({"", "mistral", false, "[THINK]Hmm, 2 + 2.[/THINK]4", out("4", {}, "Hmm, 2 + 2.")});
  check({"", "mistral", false, "4 <think>x</think>", out("4 <think>x</think>")});
  check({"", "mistral", true, "Hmm.[/THINK] Four.", out("Four.", {}, "Hmm.")});
  check({"mistral", "mistral", false, "[THINK]call it[/THINK]Sure. [TOOL_CALLS]f[ARGS]{\"a\": 1}",
         out("Sure.", {{"f", "{\"a\": 1}"}}, "call it")});
  EXPECT_EQ(think_tags("mistral")->end, "[/THINK]");
  EXPECT_EQ(think_tags("deepseek-r1")->start, "<think>");
  EXPECT_FALSE(think_tags("gpt-oss"));
  EXPECT_FALSE(think_tags("unknown"));
  // What each name asks of the output: it starts inside the reasoning; the detokenizer keeps
  // the special tokens its markers are.
  EXPECT_TRUE(starts_in_reasoning({"", "qwen3-thinking"}));
  EXPECT_TRUE(starts_in_reasoning({"", "deepseek-r1"}));
  EXPECT_FALSE(starts_in_reasoning({"", "qwen3"}));
  EXPECT_TRUE(starts_in_reasoning({"", "qwen3", true}));
  EXPECT_TRUE(needs_special_tokens({"", "mistral"}));
  EXPECT_TRUE(needs_special_tokens({"", "gpt-oss"}));
  EXPECT_TRUE(needs_special_tokens({"mistral", ""}));
  EXPECT_TRUE(needs_special_tokens({"gpt-oss", "qwen3"}));
  // Any tool-call parser: its markers are special tokens in some models (Hermes-3's <tool_call>,
  // Llama 3's <|python_tag|>).
  EXPECT_TRUE(needs_special_tokens({"qwen25", "qwen3"}));
  EXPECT_TRUE(needs_special_tokens({"llama3", ""}));
  EXPECT_FALSE(needs_special_tokens({"", "qwen3"}));
  EXPECT_FALSE(needs_special_tokens({"", ""}));
}

TEST(ReasoningParser, WithToolCalls) {
  check({"qwen25", "qwen3", false,
         "<think>I should call.</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": "
         "{}}\n</tool_call>",
         out("", {{"f", "{}"}}, "I should call.")});
  // A tool-call marker inside the reasoning is reasoning (deepseek-r1)...
  check({"qwen25", "deepseek-r1", false, "maybe <tool_call> later</think>ok",
         out("ok", {}, "maybe <tool_call> later")});
  // ...except Qwen3's <tool_call>, which ends it as </think> does (SGLang's Qwen3Detector:
  // Qwen3 models may open a call without closing their reasoning), whichever comes first.
  check({"qwen25", "qwen3-thinking", false,
         "I need the weather.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
         out("", {{"f", "{}"}}, "I need the weather.")});
  check({"qwen3_coder", "qwen3", false,
         "<think>\nWeather.\n<tool_call>\n<function=f>\n</function>\n</tool_call>",
         out("", {{"f", "{}"}}, "Weather.")});
  check({"", "qwen3", true, "a <tool_call> b</think>c", out("<tool_call> b</think>c", {}, "a")});
  check({"", "qwen3", true, "a</think> <tool_call>", out("<tool_call>", {}, "a")});
  EXPECT_EQ(think_tags("qwen3")->interrupt, "<tool_call>");
  EXPECT_EQ(think_tags("deepseek-r1")->interrupt, "");
}

// Random outputs built from the formats' pieces (markers, halves of markers, JSON, Python,
// whitespace, unicode): whatever they parse to, every split parses to the same.
TEST(OutputParser, RandomOutputsAgreeWhenSplit) {
  const std::vector<std::string> pieces = {"<tool_call>",
                                           "</tool_call>",
                                           "<tool_",
                                           "{",
                                           "}",
                                           "[",
                                           "]",
                                           "(",
                                           ")",
                                           "\"name\"",
                                           ": ",
                                           "\"f\"",
                                           ", ",
                                           "\"arguments\"",
                                           "\"parameters\"",
                                           "1",
                                           "-2.5",
                                           "true",
                                           "\"s\\\"\"",
                                           "<|python_tag|>",
                                           ";",
                                           "[TOOL_CALLS]",
                                           "[ARGS]",
                                           "[CALL_ID]",
                                           "f(",
                                           "a=",
                                           "'x'",
                                           "None",
                                           "<｜tool▁calls▁begin｜>",
                                           "<｜tool▁call▁begin｜>",
                                           "function",
                                           "<｜tool▁sep｜>",
                                           "\n",
                                           "```json\n",
                                           "```",
                                           "<｜tool▁call▁end｜>",
                                           "<｜tool▁calls▁end｜>",
                                           "<|channel|>",
                                           "analysis",
                                           "final",
                                           "commentary to=functions.g ",
                                           "<|message|>",
                                           "<|end|>",
                                           "<|call|>",
                                           "<|start|>",
                                           "<think>",
                                           "</think>",
                                           "<th",
                                           "[THINK]",
                                           "[/THINK]",
                                           "<function=f>",
                                           "<function=",
                                           "<parameter=a>",
                                           "</parameter>",
                                           "</function>",
                                           ">",
                                           " ",
                                           "  ",
                                           "héllo",
                                           "☃",
                                           "text"};
  const std::vector<std::pair<std::string, std::string>> configs = {
      {"qwen25", ""},
      {"llama3", ""},
      {"mistral", ""},
      {"pythonic", ""},
      {"deepseekv3", ""},
      {"gpt-oss", "gpt-oss"},
      {"qwen25", "qwen3"},
      {"pythonic", "deepseek-r1"},
      {"qwen3_coder", ""},
      {"qwen3_coder", "qwen3"},
      {std::string(kJsonArrayToolCalls), ""},
      {std::string(kJsonArrayToolCalls), "qwen3"}};
  std::mt19937 rng(7);
  std::uniform_int_distribution<size_t> pick(0, pieces.size() - 1);
  for (const auto& [tools, reasoning] : configs) {
    for (int i = 0; i < 150; ++i) {
      Case c{tools, reasoning, i % 3 == 0, "", {}};
      const int n = 1 + static_cast<int>(rng() % 24);
      for (int j = 0; j < n; ++j) c.text += pieces[pick(rng)];
      const ParsedOutput whole = chunked(c, {});
      for (size_t cut = 0; cut <= c.text.size(); ++cut) {
        ASSERT_EQ(chunked(c, {cut}), whole)
            << tools << "/" << reasoning << " split at " << cut << ": " << c.text;
      }
      std::vector<size_t> every;
      for (size_t k = 1; k < c.text.size(); ++k) every.push_back(k);
      ASSERT_EQ(chunked(c, every), whole) << c.text;
    }
  }
}

TEST(OutputParser, Names) {
  EXPECT_TRUE(check_tool_call_parser("qwen25").ok());
  EXPECT_FALSE(check_tool_call_parser("hermes2").ok());
  EXPECT_NE(check_reasoning_parser("r1").message().find("deepseek-r1"), std::string::npos);
  auto none = make_output_parser({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  EXPECT_FALSE(make_output_parser({"nope", "", false}).ok());
}

}  // namespace
}  // namespace sgl::function_call
