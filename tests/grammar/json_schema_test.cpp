// JSON Schema -> grammar: random walks through the matcher over a corpus of real-world schemas
// must produce JSON that validates; exact integer ranges; the whitespace policies; errors.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <random>

#include "grammar/json_schema_compiler.h"
#include "grammar_test_util.h"
#include "json_schema_validator.h"
#include "json_schemas.h"

namespace sgl::grammar {
namespace {

using test::full_match;
using test::must_compile;
using test::OJson;

std::shared_ptr<const CompiledGrammar> schema_grammar(const std::string& schema,
                                                      const JsonSchemaOptions& options = {}) {
  auto g = json_schema_to_grammar(schema, options);
  if (!g.ok()) throw std::runtime_error(schema + ": " + g.status().to_string());
  return must_compile(std::move(g).value());
}

std::string schema_error(const std::string& schema) {
  auto g = json_schema_to_grammar(schema);
  if (!g.ok()) return g.status().message();
  auto c = CompiledGrammar::compile(std::move(g).value(), nullptr);
  return c.ok() ? "" : c.status().message();
}

// `walks` random walks through each corpus schema's grammar under `options`: each must end as
// JSON its schema accepts, and `check` sees each text. Returns the walks made (fewer after a
// failure).
int walk_corpus(const JsonSchemaOptions& options, int walks, std::mt19937& rng,
                const std::function<void(const std::string&)>& check = {}) {
  int made = 0;
  for (const std::string& text : test::schema_corpus()) {
    SCOPED_TRACE(text);
    const OJson schema = OJson::parse(text);
    test::Validator validator(schema);
    auto grammar = schema_grammar(text, options);
    for (int i = 0; i < walks; ++i) {
      std::string out;
      if (!test::random_walk(grammar, rng, out, 48, 0.05)) {
        ADD_FAILURE() << "stuck at: " << out;
        return made;
      }
      const OJson value = OJson::parse(out, nullptr, false);
      if (value.is_discarded()) {
        ADD_FAILURE() << "not JSON: " << out;
        return made;
      }
      EXPECT_EQ(validator.validate(value, schema), "") << out;
      if (check) check(out);
      ++made;
    }
  }
  return made;
}

TEST(grammar_json_schema, CorpusHasEnoughShapes) { EXPECT_GE(test::schema_corpus().size(), 50u); }

TEST(grammar_json_schema, RandomWalksValidate) {
  std::mt19937 rng(7);
  int walks = 0;
  for (JsonWhitespace ws : {JsonWhitespace::kCompact, JsonWhitespace::kFlexible}) {
    JsonSchemaOptions options;
    options.whitespace = ws;
    options.max_whitespace = 3;
    walks += walk_corpus(options, 12, rng);
  }
  EXPECT_GE(walks, 1200);
}

TEST(grammar_json_schema, PropertyOrderAndOptionalProperties) {
  auto g = schema_grammar(R"({"type": "object", "properties": {"a": {"type": "integer"},
      "b": {"type": "integer"}, "c": {"type": "integer"}}, "required": ["b"]})");
  for (const char* ok : {R"({"b":1})", R"({"a":1,"b":2})", R"({"b":1,"c":2})",
                         R"({"a":1,"b":2,"c":3})", R"({"a": 1, "b": 2})"}) {
    EXPECT_TRUE(full_match(g, ok)) << ok;
  }
  for (const char* bad :
       {R"({})", R"({"a":1})", R"({"b":1,"a":2})", R"({"c":1,"b":2})", R"({"b":1,})", R"({,"b":1})",
        R"({"b":1,"d":2})", R"({ "b":1})", R"({"b" :1})", R"({"b":1,"b":1})"}) {
    EXPECT_FALSE(full_match(g, bad)) << bad;
  }
}

TEST(grammar_json_schema, StrictModeAndAdditionalProperties) {
  const std::string open = R"({"type": "object", "properties": {"a": {"type": "integer"}}})";
  EXPECT_FALSE(full_match(schema_grammar(open), R"({"a":1,"x":2})"));
  JsonSchemaOptions lax;
  lax.strict = false;
  auto g = schema_grammar(open, lax);
  EXPECT_TRUE(full_match(g, R"({"a":1,"x":[true,{"y":null}]})"));
  EXPECT_TRUE(full_match(g, R"({"x":2})"));
  // A declared name is never an additional property (no duplicate keys), prefixes of it are.
  EXPECT_FALSE(full_match(g, R"({"a":1,"a":2})"));
  EXPECT_FALSE(full_match(g, R"({"a":"text"})"));
  EXPECT_TRUE(full_match(g, R"({"a":1,"ab":"text","":0})"));
  auto typed = schema_grammar(R"({"type": "object", "properties": {"id": {"type": "integer"}},
      "additionalProperties": {"type": "string"}})");
  EXPECT_TRUE(full_match(typed, R"({"id":1,"x":"y","z":""})"));
  EXPECT_FALSE(full_match(typed, R"({"id":1,"x":2})"));
  EXPECT_FALSE(full_match(typed, R"({"id":"1"})"));
}

// An annotation-only schema is any value, as `true`; enum / const keep only the values their
// sibling bounds allow (and const must be among enum's); \S excludes ECMA-262's white space.
TEST(grammar_json_schema, AnnotationsEnumBoundsAndEcmaSpace) {
  auto any = schema_grammar(R"({"type":"object","properties":{"p":{"description":"anything"}},
      "required":["p"]})");
  EXPECT_TRUE(full_match(any, R"({"p":{"k":[1,"x",null]}})"));
  EXPECT_TRUE(full_match(any, R"({"p":2.5})"));
  auto numbers = schema_grammar(R"({"type":"integer","enum":[1,5,10],"minimum":3})");
  EXPECT_FALSE(full_match(numbers, "1"));
  EXPECT_TRUE(full_match(numbers, "5"));
  EXPECT_TRUE(full_match(numbers, "10"));
  auto words = schema_grammar(R"({"enum":["a","bb","日本語"],"maxLength":2})");
  EXPECT_TRUE(full_match(words, R"("a")"));
  EXPECT_TRUE(full_match(words, R"("bb")"));
  EXPECT_FALSE(full_match(words, R"("日本語")"));
  auto one = schema_grammar(R"({"const":"a","enum":["a","b"]})");
  EXPECT_TRUE(full_match(one, R"("a")"));
  EXPECT_FALSE(full_match(one, R"("b")"));
  auto word = schema_grammar(R"({"type":"string","pattern":"^\\S+$"})");
  EXPECT_TRUE(full_match(word, R"("ab")"));
  EXPECT_FALSE(full_match(word, "\"a\u00a0b\""));  // raw U+00A0 in the text
  EXPECT_FALSE(full_match(word, "\"a\u3000b\""));
  EXPECT_FALSE(full_match(word,
                          "\"a\xc2\xa0"
                          "b\""));
}

TEST(grammar_json_schema, IntegerRangesAreExact) {
  const std::vector<std::pair<std::string, std::pair<int, int>>> cases = {
      {R"({"type":"integer","minimum":-40,"maximum":125})", {-40, 125}},
      {R"({"type":"integer","minimum":7,"maximum":7})", {7, 7}},
      {R"({"type":"integer","minimum":0,"maximum":100})", {0, 100}},
      {R"({"type":"integer","minimum":-99,"maximum":-10})", {-99, -10}},
      {R"({"type":"integer","exclusiveMinimum":-1,"exclusiveMaximum":90})", {0, 89}},
      {R"({"type":"integer","minimum":19,"maximum":291})", {19, 291}},
      {R"({"type":"integer","minimum":-1.5,"maximum":2.5})", {-1, 2}},
  };
  for (const auto& [schema, range] : cases) {
    auto g = schema_grammar(schema);
    for (int v = -400; v <= 400; ++v) {
      const bool in = v >= range.first && v <= range.second;
      EXPECT_EQ(full_match(g, std::to_string(v)), in) << schema << " " << v;
    }
    EXPECT_FALSE(full_match(g, "-0")) << schema;
    EXPECT_FALSE(full_match(g, "007")) << schema;
  }
  auto lower = schema_grammar(R"({"type":"integer","minimum":95})");
  for (int v = -200; v <= 2000; ++v) EXPECT_EQ(full_match(lower, std::to_string(v)), v >= 95);
  EXPECT_TRUE(full_match(lower, "123456789012345678901234567890"));
  auto upper = schema_grammar(R"({"type":"integer","maximum":-95})");
  for (int v = -2000; v <= 200; ++v) EXPECT_EQ(full_match(upper, std::to_string(v)), v <= -95);
}

TEST(grammar_json_schema, BoundedNumbersAreSound) {
  auto g = schema_grammar(R"({"type":"number","minimum":-2.5,"exclusiveMaximum":3.5})");
  for (const char* ok : {"-2", "0", "3", "-1.99", "2.999", "0.5", "-0.25", "-2.5", "-2.50",
                         "3.4999", "-0.0", "3.0"}) {
    EXPECT_TRUE(full_match(g, ok)) << ok;
  }
  for (const char* bad : {"4", "-3", "3.5", "3.50", "1e3", "-2.6", "-2.51", "3.7", "-0", "01.5"}) {
    EXPECT_FALSE(full_match(g, bad)) << bad;
  }
  // Exclusive bounds at whole numbers still leave the fractions between them.
  auto open_unit = schema_grammar(R"({"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1})");
  for (const char* ok : {"0.5", "0.001", "0.999", "0.10"}) EXPECT_TRUE(full_match(open_unit, ok));
  for (const char* bad : {"0", "1", "0.0", "0.000", "1.0", "-0.5", "-0.0"}) {
    EXPECT_FALSE(full_match(open_unit, bad)) << bad;
  }
}

// Every number the grammar writes within random decimal bounds: exactly those whose value lies
// within them, checked on integers scaled by 10^4 (bounds of up to 3 decimals, candidates of up
// to 4).
TEST(grammar_json_schema, BoundedNumbersAreExact) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> bound_units(-25000, 25000);  // +-2.5 in 10^-4
  std::uniform_int_distribution<int> kind(0, 5);
  auto decimal = [](int64_t scaled, int decimals) {
    // scaled / 10^4 written with `decimals` fraction digits (scaled is a multiple of the rest).
    const bool neg = scaled < 0;
    const int64_t m = neg ? -scaled : scaled;
    std::string s = (neg ? "-" : "") + std::to_string(m / 10000);
    if (decimals > 0) {
      std::string frac = std::to_string(10000 + m % 10000).substr(1);
      s += "." + frac.substr(0, decimals);
    }
    return s;
  };
  for (int round = 0; round < 120; ++round) {
    // A bound of up to 3 decimals, or none; inclusive or exclusive.
    auto make_bound = [&](const char* key, const char* ex_key, std::optional<int64_t>& at,
                          bool& exclusive) -> std::string {
      const int k = kind(rng);
      if (k == 0) return "";
      at = bound_units(rng) / 10 * 10;
      if (k == 1) at = *at / 10000 * 10000;  // a whole number
      exclusive = k % 2 == 0;
      return std::string("\"") + (exclusive ? ex_key : key) + "\":" + decimal(*at, 3);
    };
    std::optional<int64_t> lo, hi;
    bool lo_ex = false, hi_ex = false;
    const std::string lo_text = make_bound("minimum", "exclusiveMinimum", lo, lo_ex);
    const std::string hi_text = make_bound("maximum", "exclusiveMaximum", hi, hi_ex);
    std::string schema = R"({"type":"number")";
    for (const std::string& part : {lo_text, hi_text}) {
      if (!part.empty()) schema += "," + part;
    }
    schema += "}";
    SCOPED_TRACE(schema);
    auto in_range = [&](int64_t v) {
      return (!lo || (lo_ex ? v > *lo : v >= *lo)) && (!hi || (hi_ex ? v < *hi : v <= *hi));
    };
    auto compiled = json_schema_to_grammar(schema);
    if (!compiled.ok()) {
      // Refused only when no 4-decimal value lies within.
      EXPECT_NE(compiled.status().message().find("no number lies within"), std::string::npos);
      for (int64_t v = -40000; v <= 40000; ++v) ASSERT_FALSE(in_range(v)) << v;
      continue;
    }
    auto g = must_compile(std::move(compiled).value());
    for (int64_t v = -30000; v <= 30000; v += 1 + static_cast<int64_t>(rng() % 37)) {
      constexpr int64_t kUnit[] = {10000, 1000, 100, 10, 1};  // one digit of `decimals`
      for (int decimals = 0; decimals <= 4; ++decimals) {
        const int64_t x = v / kUnit[decimals] * kUnit[decimals];
        const std::string text = decimal(x, decimals);
        if (text == "-0") continue;  // JSON allows it; the grammar writes 0
        EXPECT_EQ(full_match(g, text), in_range(x)) << text;
      }
    }
  }
}

// Recursive types whose recursion passes through a merge (the target inlined beside other
// keywords: Pydantic v1's described fields, OpenAPI's nullable references) compile, and what they
// write validates, to the depth a random walk reaches.
TEST(grammar_json_schema, RecursionThroughMergedReferences) {
  const std::vector<std::string> schemas = {
      // Pydantic v1: a described field of the model's own type.
      R"({"definitions":{"N":{"type":"object","properties":{"v":{"type":"integer"},
          "parent":{"description":"p","allOf":[{"$ref":"#/definitions/N"}]}},"required":["v"]}},
          "allOf":[{"$ref":"#/definitions/N"}]})",
      // A reference whose sibling narrows the target's property.
      R"({"$defs":{"N":{"type":"object","properties":{"v":{"type":"integer"},
          "parent":{"$ref":"#/$defs/N","properties":{"v":{"minimum":1}}}},"required":["v"]}},
          "$ref":"#/$defs/N"})",
      // A reference with a constraining sibling inside an array.
      R"({"$defs":{"N":{"type":"object","properties":{"v":{"type":"integer","minimum":0},
          "kids":{"type":"array","items":{"$ref":"#/$defs/N","required":["v"]},"maxItems":2}}}},
          "$ref":"#/$defs/N"})",
      // anyOf with a sibling constraint around the reference.
      R"({"$defs":{"N":{"type":"object","properties":{"next":{"anyOf":[{"$ref":"#/$defs/N"},
          {"type":"null"}],"required":["end"]},"end":{"type":"boolean"}}}},"$ref":"#/$defs/N"})",
  };
  std::mt19937 rng(3);
  for (const std::string& text : schemas) {
    SCOPED_TRACE(text);
    const OJson schema = OJson::parse(text);
    test::Validator validator(schema);
    auto grammar = schema_grammar(text);
    for (int i = 0; i < 40; ++i) {
      std::string out;
      ASSERT_TRUE(test::random_walk(grammar, rng, out, 64, 0.1)) << "stuck at: " << out;
      const OJson value = OJson::parse(out, nullptr, false);
      ASSERT_FALSE(value.is_discarded()) << out;
      EXPECT_EQ(validator.validate(value, schema), "") << out;
    }
  }
  // A merge that requires itself without end still has no finite value.
  EXPECT_NE(schema_error(R"({"$defs":{"N":{"type":"object","properties":{"n":{"$ref":"#/$defs/N",
      "nullable":false}},"required":["n"]}},"$ref":"#/$defs/N"})"),
            "");
}

TEST(grammar_json_schema, Formats) {
  struct Case {
    const char* format;
    std::vector<const char*> ok, bad;
  };
  const std::vector<Case> cases = {
      {"date",
       {"2024-02-28", "1999-12-31", "2023-04-30"},
       {"2024-02-30", "2023-04-31", "2023-13-01", "23-01-01"}},
      {"time", {"23:59:59Z", "00:00:00.123+05:30"}, {"24:00:00Z", "12:00:00", "12:60:00Z"}},
      {"date-time", {"2024-01-15T08:30:00Z"}, {"2024-01-15 08:30:00Z", "2024-01-15T08:30Z"}},
      {"email", {"a.b+c@example.co.uk", "x@y.io"}, {"@x.io", "a@b", "a b@c.de"}},
      {"uuid", {"123e4567-e89b-12d3-a456-426614174000"}, {"123e4567e89b12d3a456426614174000"}},
      {"uri",
       {"https://example.com/a?b=c#d", "urn:isbn:0451450523"},
       {"example.com", "http://a b"}},
      {"ipv4", {"192.168.0.1", "255.255.255.255", "0.0.0.0"}, {"256.1.1.1", "1.2.3", "01.2.3.4"}},
      {"ipv6",
       {"::", "::1", "1::", "fe80::1:2", "2001:db8:0:0:0:0:2:1",
        "1:2:3:4:5:6:7::", "1::2:3:4:5:6:7", "ABCD:ef01::", "::ffff:1.2.3.4", "64:ff9b::192.0.2.33",
        "1::d6:192.168.0.1", "1:2:3:4:5:6:1.2.3.4", "::1.2.3.4", "1:2:3:4:5::1.2.3.4"},
       {":", ":::", "1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", "g::", "1:2:3:4:5:6:7", ":1::",
        "1:2:3:4:5:6:7:1.2.3.4", "1:2:3:4:5:6::1.2.3.4", "::256.1.1.1", "1.2.3.4", "::1.2.3"}},
      {"hostname",
       {"localhost", "example.com", "a-b.c0.example", "x1.y", "a.b.c.d.e",
        "api.eu.west.example.com", "a.b.c.d.e.f.g.h"},
       {"-a.com", "a-.com", "a..com", "1.2.3.4", "a_b.com", "example.com.", "a.b-.c.d.e"}},
      {"duration",
       {"P1D", "PT2H", "P1Y2M3DT4H5M6S", "P3W", "PT0S", "P1MT1M", "PT1H30M"},
       {"P", "PT", "P1H", "P1Y2D", "PT1S2M", "P1W2D", "1D", "P1.5D", "P1DT"}},
  };
  for (const Case& c : cases) {
    auto g = schema_grammar(std::string(R"({"type":"string","format":")") + c.format + "\"}");
    for (const char* s : c.ok) EXPECT_TRUE(full_match(g, "\"" + std::string(s) + "\"")) << s;
    for (const char* s : c.bad) EXPECT_FALSE(full_match(g, "\"" + std::string(s) + "\"")) << s;
    // What the grammar writes passes the validator's own check of the format.
    std::mt19937 rng(11);
    for (int i = 0; i < 200; ++i) {
      std::string out;
      ASSERT_TRUE(test::random_walk(g, rng, out, 40, 0.1)) << c.format << ": " << out;
      EXPECT_TRUE(test::valid_format(c.format, out.substr(1, out.size() - 2)))
          << c.format << ": " << out;
    }
  }
}

// minLength / maxLength beside a pattern or format: kept where the pattern's lengths already
// lie within, narrowed on the pattern's one repetition of single characters, refused otherwise.
TEST(grammar_json_schema, LengthsBesidePatterns) {
  struct Case {
    const char* schema;
    std::vector<const char*> ok, bad;
  };
  const std::vector<Case> cases = {
      {R"({"type":"string","pattern":"^[a-z]+$","maxLength":5})",
       {"a", "abcde"},
       {"", "abcdef", "A"}},
      {R"({"type":"string","pattern":"^[A-Z][a-z]*-$","minLength":4,"maxLength":5})",
       {"Abc-", "Abcd-"},
       {"Ab-", "Abcde-", "abc-"}},
      {R"({"type":"string","format":"date","minLength":10,"maxLength":10})",
       {"2024-02-28"},
       {"2024-2-28"}},
      {R"({"type":"string","pattern":"^[\"a]*$","maxLength":2})",
       {R"(\"\")", "a\\\""},
       {R"(\"\"a)", "aaa"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.schema);
    auto g = schema_grammar(c.schema);
    for (const char* s : c.ok) EXPECT_TRUE(full_match(g, "\"" + std::string(s) + "\"")) << s;
    for (const char* s : c.bad) EXPECT_FALSE(full_match(g, "\"" + std::string(s) + "\"")) << s;
    const OJson schema = OJson::parse(c.schema);
    test::Validator validator(schema);
    std::mt19937 rng(5);
    for (int i = 0; i < 100; ++i) {
      std::string out;
      ASSERT_TRUE(test::random_walk(g, rng, out, 24, 0.2)) << out;
      EXPECT_EQ(validator.validate(OJson::parse(out), schema), "") << out;
    }
  }
  EXPECT_NE(schema_error(R"({"type":"string","pattern":"^x\\d{0,9}y?$","minLength":3})")
                .find("varies other than in one repetition"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"type":"string","format":"date","maxLength":9})")
                .find("no string of the pattern / format has a length within"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"type":"string","pattern":"^a+$","minLength":3,"maxLength":2})")
                .find("maxLength is below minLength"),
            std::string::npos);
}

TEST(grammar_json_schema, Strings) {
  auto g = schema_grammar(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_TRUE(full_match(g, R"("ab")"));
  EXPECT_TRUE(full_match(g, R"("a\n\u00e9")"));  // escapes count as one character each
  EXPECT_TRUE(full_match(g, "\"\xC3\xA9\xF0\x9F\x98\x80\""));
  EXPECT_FALSE(full_match(g, R"("a")"));
  EXPECT_FALSE(full_match(g, R"("abcd")"));
  auto any = schema_grammar(R"({"type":"string"})");
  EXPECT_TRUE(full_match(any, R"("tab\t quote\" slash\/ \u20AC")"));
  EXPECT_FALSE(full_match(any, "\"raw\nnewline\""));
  EXPECT_FALSE(full_match(any, R"("bad \x escape")"));
  EXPECT_FALSE(full_match(any, R"("lone \ud800 surrogate")"));
  auto pattern = schema_grammar(R"({"type":"string","pattern":"^a\"b$"})");
  EXPECT_TRUE(full_match(pattern, R"("a\"b")"));
  EXPECT_FALSE(full_match(pattern, R"("a"b")"));
}

// escape_less_than: '<' only as \u003c in strings, consts, patterns and keys; random walks over
// the corpus never write a '<' and still validate.
TEST(grammar_json_schema, EscapedLessThan) {
  JsonSchemaOptions escaped;
  escaped.escape_less_than = true;
  auto any = schema_grammar(R"({"type":"string"})", escaped);
  EXPECT_TRUE(full_match(any, R"("a\u003c/b> \u003C")"));
  EXPECT_TRUE(full_match(any, R"("a>b/c")"));
  EXPECT_FALSE(full_match(any, R"("a</b>")"));
  auto bounded = schema_grammar(R"({"type":"string","maxLength":2})", escaped);
  EXPECT_TRUE(full_match(bounded, R"("\u003c/")"));  // two characters
  EXPECT_FALSE(full_match(bounded, R"("</")"));
  auto literal = schema_grammar(R"({"enum":["<a>", 1]})", escaped);
  EXPECT_TRUE(full_match(literal, R"("\u003ca>")"));
  EXPECT_FALSE(full_match(literal, R"("<a>")"));
  auto pattern = schema_grammar(R"({"type":"string","pattern":"^[<a]b$"})", escaped);
  EXPECT_TRUE(full_match(pattern, R"("\u003cb")"));
  EXPECT_TRUE(full_match(pattern, R"("ab")"));
  EXPECT_FALSE(full_match(pattern, R"("<b")"));
  for (const char* any_char :
       {R"({"type":"string","pattern":"^[^a]$"})", R"({"type":"string","pattern":"^.$"})"}) {
    auto g = schema_grammar(any_char, escaped);
    EXPECT_TRUE(full_match(g, R"("\u003c")")) << any_char;
    EXPECT_TRUE(full_match(g, R"(">")")) << any_char;
    EXPECT_FALSE(full_match(g, R"("<")")) << any_char;
  }
  auto keys = schema_grammar(
      R"({"type":"object","properties":{"<k>":{"type":"integer"}},"additionalProperties":true})",
      escaped);
  EXPECT_TRUE(full_match(keys, R"({"\u003ck>":1,"x>":2})"));
  EXPECT_FALSE(full_match(keys, R"({"<k>":1})"));
  EXPECT_FALSE(full_match(keys, R"({"x<":2})"));
  // Without the option '<' is a plain character.
  EXPECT_TRUE(full_match(schema_grammar(R"({"type":"string"})"), R"("a</b>")"));

  std::mt19937 rng(11);
  const int walks = walk_corpus(escaped, 4, rng, [](const std::string& out) {
    EXPECT_EQ(out.find('<'), std::string::npos) << out;
  });
  EXPECT_GE(walks, 200);
}

TEST(grammar_json_schema, WhitespacePolicies) {
  const std::string schema = R"({"type":"object","properties":{"a":{"type":"array",
      "items":{"type":"integer"}}},"required":["a"]})";
  auto compact = schema_grammar(schema);
  EXPECT_TRUE(full_match(compact, R"({"a":[1,2]})"));
  EXPECT_TRUE(full_match(compact, R"({"a": [1, 2]})"));
  EXPECT_FALSE(full_match(compact, R"({"a":  [1,2]})"));
  EXPECT_FALSE(full_match(compact, "{\"a\":[1,2]\n}"));
  EXPECT_FALSE(full_match(compact, R"({ "a":[1,2]})"));
  JsonSchemaOptions flexible;
  flexible.whitespace = JsonWhitespace::kFlexible;
  flexible.max_whitespace = 4;
  auto flex = schema_grammar(schema, flexible);
  EXPECT_TRUE(full_match(flex, "{\n  \"a\" : [ 1 ,\t2 ]\r\n}"));
  EXPECT_FALSE(full_match(flex, "{     \"a\":[1]}"));  // a run of 5 > max_whitespace
}

TEST(grammar_json_schema, WhitespacePatternGoesWhereJsonAllowsWhitespace) {
  const std::string schema = R"({"type":"object","properties":{"a":{"type":"array",
      "items":{"type":"integer"}}},"required":["a"]})";
  JsonSchemaOptions newlines;
  newlines.whitespace_pattern = *JsonWhitespacePattern::parse("[\\n ]*");
  auto g = schema_grammar(schema, newlines);
  EXPECT_TRUE(full_match(g, R"({"a":[1,2]})"));
  EXPECT_TRUE(full_match(g, "{\n  \"a\" :\n [ 1 ,  2 ]\n}"));
  EXPECT_FALSE(full_match(g, "{\t\"a\":[1,2]}"));  // not the pattern's
  EXPECT_FALSE(full_match(g, "{\"a\":[1,2]} "));   // nor outside the value
  // A pattern that requires whitespace puts it at every place: the pattern overrides the
  // compact default.
  JsonSchemaOptions one_space;
  one_space.whitespace_pattern = *JsonWhitespacePattern::parse(" ");
  auto spaced = schema_grammar(schema, one_space);
  EXPECT_TRUE(full_match(spaced, R"({ "a" : [ 1 , 2 ] })"));
  EXPECT_FALSE(full_match(spaced, R"({"a": [1, 2]})"));
  auto object = must_compile(any_json_object_grammar(one_space));
  EXPECT_TRUE(full_match(object, R"({ "b" : true })"));
  EXPECT_FALSE(full_match(object, R"({"b":true})"));
  // Random walks of the corpus stay valid JSON of their schemas under a pattern.
  std::mt19937 rng(11);
  EXPECT_GE(walk_corpus(newlines, 2, rng), 100);
}

TEST(grammar_json_schema, WhitespacePatternIsCheckedWhenMade) {
  for (const char* bad : {"(", "[a-", "\\1", "(?=x)"}) {
    auto p = JsonWhitespacePattern::parse(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_NE(p.status().message().find("JSON whitespace pattern"), std::string::npos);
  }
  EXPECT_EQ(JsonWhitespacePattern::parse("[ \\t]{0,4}")->regex(), "[ \\t]{0,4}");
}

TEST(grammar_json_schema, JsonObjectMode) {
  auto g = must_compile(any_json_object_grammar());
  EXPECT_TRUE(full_match(g, R"({})"));
  EXPECT_TRUE(full_match(g, R"({"a":[1,-2.5e3,"x",{"b":null}],"c":true})"));
  EXPECT_FALSE(full_match(g, R"([1])"));
  EXPECT_FALSE(full_match(g, R"("x")"));
  EXPECT_FALSE(full_match(g, R"({"a":01})"));
  EXPECT_FALSE(full_match(g, R"({"a":1,})"));
}

TEST(grammar_json_schema, ErrorsNameTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type":"object","patternProperties":{"^x":{}}})",
       "unsupported keyword 'patternProperties'"},
      {R"({"type":"object","properties":{"a":{"type":"number","multipleOf":2}}})",
       "at '#/properties/a': unsupported keyword 'multipleOf'"},
      {R"({"minProperties":1})", "unsupported keyword 'minProperties'"},
      {R"({"type":"array","uniqueItems":true})", "uniqueItems"},
      {R"({"if":{},"then":{}})", "unsupported keyword 'if'"},
      {R"({"type":"string","format":"uri-template"})", "unsupported format 'uri-template'"},
      {R"({"type":"string","pattern":"(a)\\1"})", "backreferences are not supported"},
      {R"({"type":"strin"})", "unknown type 'strin'"},
      {R"({"$ref":"#/$defs/missing"})", "does not resolve"},
      {R"({"$ref":"https://example.com/schema.json"})", "only references into this document"},
      {R"(false)", "accepts no value"},
      {R"({"type":"object","properties":{"a":false},"required":["a"]})", "accepts no value"},
      {R"({"type":"object","additionalProperties":false,"required":["x"]})",
       "required property 'x' is not allowed"},
      {R"({"type":"array","prefixItems":[{}],"items":false,"minItems":2})",
       "minItems cannot be met"},
      {R"({"type":"string","minLength":5,"maxLength":2})", "maxLength is below minLength"},
      {R"({"type":"integer","minimum":5,"maximum":4})", "no integer lies within"},
      {R"({"type":"number","exclusiveMinimum":0.5,"exclusiveMaximum":0.5})",
       "no number lies within minimum / maximum"},
      {R"({"allOf":[{"type":"string"},{"type":"integer"}]})", "the types do not intersect"},
      {R"({"allOf":[{"pattern":"a"},{"pattern":"b"}]})", "cannot merge differing 'pattern'"},
      {R"({"enum":[]})", "enum must be a non-empty array"},
      {R"({"type":"string","enum":[1,2]})", "no enum / const value has the schema's type"},
      {R"({"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})", "accepts no string"},
      {R"({"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"null"}]}},"$ref":"#/$defs/a"})",
       "left recursion"},
      {R"({"$defs":{"n":{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}},
          "required":["n"]}},"$ref":"#/$defs/n"})",
       "accepts no string"},
      {R"({"type":"integer","minimum":1e30})", "beyond +-2^53"},
      // A float past 2^53 (exact as a double, 1e17, but its exclusive neighbour is not) and a
      // bound merged past it from two parts are refused as integer literals past it are.
      {R"({"type":"integer","exclusiveMaximum":1e17})", "beyond +-2^53"},
      {R"({"type":"number","exclusiveMinimum":-1e17})", "beyond +-2^53"},
      {R"({"allOf":[{"maximum":9007199254740995},{"maximum":9007199254741000}]})", "beyond +-2^53"},
      {R"({"type":"string","maxLength":10000000})", "maxLength above"},
      {R"({"allOf":[{"type":[1]},{"type":"string"}]})", "type must name types"},
      {R"({"allOf":[{"required":"a"},{"required":["b"]}]})", "required must be an array"},
      {R"({"allOf":[{"enum":"a"},{"enum":["b"]}]})", "enum must be an array"},
      {R"({"const":"b","enum":["a"]})", "const is not one of the enum's values"},
      {R"({"enum":["a","b"],"pattern":"a"})", "'pattern' beside enum / const is not supported"},
      {R"({"allOf":[{"type":"object","properties":{"a":{}},"additionalProperties":false},
          {"properties":{"b":{"type":"integer"}}}]})",
       "other part's property 'b'"},
      {R"({"allOf":[{"type":"array","items":{"type":"integer"}},
          {"prefixItems":[{"type":"string"}]}]})",
       "items in one part and prefixItems in another"},
      {R"({"type":"integer","minimum":9007199254740993})", "beyond +-2^53"},
      {R"({"type":"object",)", "not valid JSON"},
      {R"(42)", "a schema must be an object or a boolean"},
  };
  for (const auto& [schema, expected] : cases) {
    const std::string message = schema_error(schema);
    EXPECT_NE(message.find(expected), std::string::npos)
        << schema << "\n  -> " << (message.empty() ? "(compiled)" : message);
  }
}

TEST(grammar_json_schema, HugePropertyNamesAreAnErrorNotACrash) {
  const std::string name(100000, 'k');
  EXPECT_NE(schema_error(R"({"type":"object","properties":{")" + name + R"(":{}}})")
                .find("longer than 1024 bytes"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"type":"object","additionalProperties":true,"required":[")" + name +
                         R"("]})")
                .find("longer than 1024 bytes"),
            std::string::npos);
}

// Each level's allOf names the next level twice: inlined, 2^40 merges from 3 KB of schema
// (it ran for days). The expansion is bounded: an error within the work limit.
TEST(grammar_json_schema, ExponentialAllOfExpansionIsAnError) {
  std::string defs;
  for (int i = 0; i < 40; ++i) {
    const std::string next = "{\"$ref\":\"#/$defs/d" + std::to_string(i + 1) + "\"}";
    defs += "\"d" + std::to_string(i) + "\":{\"allOf\":[" + next + "," + next + "]},";
  }
  defs += R"("d40":{"type":"string"})";
  const std::string schema = R"({"$defs":{)" + defs + R"(},"allOf":[{"$ref":"#/$defs/d0"}]})";
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(schema_error(schema).find("schema too large"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(grammar_json_schema, DeepSchemasAreAnErrorNotACrash) {
  std::string deep;
  for (int i = 0; i < 2000; ++i) deep += R"({"type":"array","items":)";
  deep += "{}";
  for (int i = 0; i < 2000; ++i) deep += "}";
  EXPECT_NE(schema_error(deep).find("nested too deeply"), std::string::npos);
}

}  // namespace
}  // namespace sgl::grammar
