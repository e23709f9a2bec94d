// Value model: Python printing, equality/hashing, the ordered dict, JSON in/out, UTF-8 helpers.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tokenizer/chat_template/json_value.h"
#include "tokenizer/chat_template/py_format.h"
#include "tokenizer/chat_template/render_budget.h"
#include "tokenizer/chat_template/utf8.h"
#include "tokenizer/chat_template/value.h"
#include "tokenizer/chat_template/value_format.h"

namespace sgl::tokenizer::jinja {
namespace {

TEST(ChatTemplateFloatRepr, MatchesPython) {
  EXPECT_EQ(float_repr(1.0), "1.0");
  EXPECT_EQ(float_repr(0.1), "0.1");
  EXPECT_EQ(float_repr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(float_repr(-2.5), "-2.5");
  EXPECT_EQ(float_repr(1e16), "1e+16");
  EXPECT_EQ(float_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(float_repr(123456789.123), "123456789.123");
  EXPECT_EQ(float_repr(1e-4), "0.0001");
  EXPECT_EQ(float_repr(1e-5), "1e-05");
  EXPECT_EQ(float_repr(1.5e-7), "1.5e-07");
  EXPECT_EQ(float_repr(1e300 * 10), "1e+301");
  EXPECT_EQ(float_repr(-0.0), "-0.0");
  EXPECT_EQ(float_repr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(float_repr(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(float_repr(std::nan("")), "nan");
}

TEST(ChatTemplateStringRepr, QuotesAndEscapes) {
  EXPECT_EQ(string_repr("abc"), "'abc'");
  EXPECT_EQ(string_repr("it's"), "\"it's\"");
  EXPECT_EQ(string_repr("a\"b"), "'a\"b'");
  EXPECT_EQ(string_repr("both'\""), "'both\\'\"'");
  EXPECT_EQ(string_repr("a\nb\t\\"), "'a\\nb\\t\\\\'");
  EXPECT_EQ(string_repr(std::string("\x00\x7f", 2)), "'\\x00\\x7f'");
  EXPECT_EQ(string_repr("\xc2\xa0"), "'\\xa0'");        // NBSP is not printable
  EXPECT_EQ(string_repr("\xe2\x80\x8b"), "'\\u200b'");  // zero-width space
  EXPECT_EQ(string_repr("\xc3\xa9\xe6\x97\xa5"), "'\xc3\xa9\xe6\x97\xa5'");  // printable kept
}

TEST(ChatTemplatePyRepr, Containers) {
  DictData d;
  d.set("k", Value::list({Value(1), Value("a"), Value::none(), Value(true), Value(1.5)}));
  d.set(Value(2), Value::tuple({Value(1)}));
  EXPECT_EQ(py_repr(Value::dict(d)), "{'k': [1, 'a', None, True, 1.5], 2: (1,)}");
  EXPECT_EQ(py_repr(Value::tuple({})), "()");
  EXPECT_EQ(py_str(Value::undefined("x")), "");
  EXPECT_EQ(py_repr(Value::undefined("x")), "Undefined");
  EXPECT_EQ(py_str(Value::markup("<b>")), "<b>");
  EXPECT_EQ(py_repr(Value::markup("<b>")), "Markup('<b>')");
}

TEST(ChatTemplateEquality, PythonSemantics) {
  EXPECT_TRUE(py_equal(Value(1), Value(1.0)));
  EXPECT_TRUE(py_equal(Value(true), Value(1)));
  EXPECT_FALSE(py_equal(Value("1"), Value(1)));
  EXPECT_FALSE(py_equal(Value::list({Value(1)}), Value::tuple({Value(1)})));
  EXPECT_TRUE(py_equal(Value::none(), Value::none()));
  EXPECT_TRUE(py_equal(Value::undefined("a"), Value::undefined("b")));
  DictData a, b;
  a.set("x", Value(1));
  a.set("y", Value(2));
  b.set("y", Value(2.0));
  b.set("x", Value(true));
  EXPECT_TRUE(py_equal(Value::dict(a), Value::dict(b)));  // order-insensitive
}

TEST(ChatTemplateDictData, KeysFollowPythonHashing) {
  DictData d;
  d.set(Value(1), Value("int"));
  EXPECT_EQ(d.find(Value(1.0))->as_string(), "int");
  EXPECT_EQ(d.find(Value(true))->as_string(), "int");
  d.set(Value(true), Value("bool"));  // same key as 1: replaced in place
  EXPECT_EQ(d.size(), 1u);
  EXPECT_EQ(d.find(Value(1))->as_string(), "bool");
  EXPECT_FALSE(d.set(Value::list(), Value(1)));  // unhashable
  EXPECT_EQ(d.find(Value::list()), nullptr);
}

TEST(ChatTemplateDictData, PreservesInsertionOrderAndErases) {
  DictData d;
  d.set("b", Value(1));
  d.set("a", Value(2));
  d.set("c", Value(3));
  d.set("b", Value(4));
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d.entries()[0].first.as_string(), "b");
  EXPECT_EQ(d.entries()[0].second.as_int(), 4);
  EXPECT_TRUE(d.erase(Value("a")));
  EXPECT_FALSE(d.erase(Value("a")));
  EXPECT_EQ(d.entries()[1].first.as_string(), "c");
  EXPECT_EQ(d.find("c")->as_int(), 3);
}

TEST(ChatTemplateValueSemantics, ContainersAreShared) {
  Value list = Value::list({Value(1)});
  Value alias = list;
  alias.items().push_back(Value(2));
  EXPECT_EQ(list.items().size(), 2u);
  EXPECT_EQ(list.identity(), alias.identity());
}

TEST(ChatTemplateJsonInput, PreservesOrderAndTypes) {
  auto v = value_from_json(R"({"z": 1, "a": [1.5, true, null, "s"], "m": {"y": 2, "b": 3},
                               "big": 18446744073709551615})");
  ASSERT_TRUE(v.ok());
  const DictData& d = v->dict_data();
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d.entries()[0].first.as_string(), "z");
  EXPECT_EQ(d.entries()[1].first.as_string(), "a");
  EXPECT_TRUE(d.find("z")->is_int());
  const auto& a = d.find("a")->items();
  EXPECT_TRUE(a[0].is_float());
  EXPECT_TRUE(a[1].is_bool());
  EXPECT_TRUE(a[2].is_none());
  EXPECT_EQ(d.find("m")->dict_data().entries()[0].first.as_string(), "y");
  EXPECT_TRUE(d.find("big")->is_float());  // beyond int64
}

TEST(ChatTemplateJsonInput, RejectsBadInput) {
  EXPECT_FALSE(value_from_json("{").ok());
  EXPECT_FALSE(value_from_json("").ok());
  EXPECT_FALSE(value_from_json(std::string(100000, '[') + std::string(100000, ']')).ok());
}

TEST(ChatTemplateJsonDump, PythonJsonDumps) {
  auto v = value_from_json(R"({"b": [1, 2.5, null, true], "a": {"c": "d\u00e9\n"}, "e": []})");
  ASSERT_TRUE(v.ok());
  JsonDumpOptions o;
  EXPECT_EQ(*dump_json(*v, o),
            "{\"b\": [1, 2.5, null, true], \"a\": {\"c\": \"d\xc3\xa9\\n\"}, \"e\": []}");
  o.ensure_ascii = true;
  EXPECT_EQ(*dump_json(Value("\xc3\xa9\xf0\x9f\x98\x80"), o), "\"\\u00e9\\ud83d\\ude00\"");
  JsonDumpOptions indented;
  indented.indent = "  ";
  EXPECT_EQ(*dump_json(*v, indented),
            "{\n  \"b\": [\n    1,\n    2.5,\n    null,\n    true\n  ],\n  \"a\": {\n    \"c\": "
            "\"d\xc3\xa9\\n\"\n  },\n  \"e\": []\n}");
  JsonDumpOptions sorted;
  sorted.sort_keys = true;
  sorted.item_separator = ",";
  sorted.key_separator = ":";
  EXPECT_EQ(*dump_json(*v, sorted),
            "{\"a\":{\"c\":\"d\xc3\xa9\\n\"},\"b\":[1,2.5,null,true],\"e\":[]}");
  EXPECT_EQ(*dump_json(Value(std::nan("")), o), "NaN");
}

TEST(ChatTemplateJsonDump, UnserializableValues) {
  JsonDumpOptions o;
  auto r = dump_json(Value::undefined("x"), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "TypeError: Object of type Undefined is not JSON serializable");
  r = dump_json(Value::iterator("generator", {}), o);
  EXPECT_EQ(r.status().message(), "TypeError: Object of type generator is not JSON serializable");
  Value self_ref = Value::list();
  self_ref.items().push_back(self_ref);  // cycle: bounded by the depth limit, not a crash
  EXPECT_FALSE(dump_json(self_ref, o).ok());
  self_ref.items().clear();
}

TEST(ChatTemplateUtf8, LengthStripAndCase) {
  EXPECT_EQ(utf8_length("h\xc3\xa9llo \xe6\x97\xa5"), 7u);
  EXPECT_EQ(py_strip("\xe3\x80\x80 hi\xc2\xa0\n", nullptr, true, true), "hi");
  std::string chars = "x";
  EXPECT_EQ(py_strip("xxhixx", &chars, true, false), "hixx");
  EXPECT_EQ(py_upper("\xc3\xa9t\xc3\xa9"), "\xc3\x89T\xc3\x89");
  EXPECT_EQ(py_title("hello wORLD"), "Hello World");
  EXPECT_EQ(utf8_encode(utf8_decode("a\xff")), "a\xef\xbf\xbd");  // invalid byte -> U+FFFD
}

TEST(ChatTemplatePyFormat, FormatSpecs) {
  EXPECT_EQ(*format_value(Value(3.14159), ".2f"), "3.14");
  EXPECT_EQ(*format_value(Value(42), "05d"), "00042");
  EXPECT_EQ(*format_value(Value("ab"), "^6"), "  ab  ");
  EXPECT_EQ(*format_value(Value(1234567), ","), "1,234,567");
  EXPECT_FALSE(format_value(Value("x"), "d").ok());
  CallArgs args;
  args.positional = {Value("a"), Value(2)};
  args.keyword = {{"k", Value("v")}};
  RenderOptions options;
  RenderBudget budget(options);
  EXPECT_EQ(*str_format("{} {} {k} {0!r} {{x}}", args, budget), "a 2 v 'a' {x}");
  EXPECT_EQ(*percent_format("%s=%d%%", Value::tuple({Value("n"), Value(5)}), budget), "n=5%");
}

TEST(ChatTemplatePyFormat, Strftime) {
  std::tm tm{};
  tm.tm_year = 2024 - 1900;
  tm.tm_mon = 6;
  tm.tm_mday = 26;
  tm.tm_wday = 5;
  EXPECT_EQ(py_strftime("%d %b %Y|%B|%A|%f|%%", tm, 42), "26 Jul 2024|July|Friday|000042|%");
}

}  // namespace
}  // namespace sgl::tokenizer::jinja
