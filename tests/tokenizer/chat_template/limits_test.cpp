// Robustness: bad templates and runaway templates fail with a Status, never crash or hang.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tokenizer/chat_template/test_util.h"

namespace sgl::tokenizer {
namespace {

TEST(ChatTemplateLimits, InfiniteMacroRecursion) {
  auto out = render_template("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(out.status().message().find("recursion"), std::string::npos);
}

TEST(ChatTemplateLimits, DeepButBoundedRecursionWorks) {
  auto out = render_template(
      "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% else %}done{% endif %}{% endmacro %}"
      "{{ f(150) }}");
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "done");
}

TEST(ChatTemplateLimits, CallDepthIsConfigurable) {
  RenderOptions options = test_options();
  options.max_call_depth = 5;
  auto out = render_template(
      "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(10) }}", "{}",
      options);
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
}

TEST(ChatTemplateLimits, RecursiveLoopDepth) {
  // A list that contains itself: loop(item) recurses until the call limit.
  auto out = render_template(
      "{% set l = [1] %}{% for i in [l] recursive %}"
      "{{ loop([i]) }}{% endfor %}");
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
}

TEST(ChatTemplateLimits, OutputSize) {
  RenderOptions options = test_options();
  options.max_output_bytes = 1000;
  auto out =
      render_template("{% for i in range(100) %}0123456789abcdef{% endfor %}", "{}", options);
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
  out = render_template("{{ 'x' * 100000 }}", "{}", options);
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
  // Strings built up without being output are bounded too.
  out = render_template(
      "{% set ns = namespace(s='ab') %}{% for i in range(20) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}",
      "{}", options);
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
}

TEST(ChatTemplateLimits, HugeRepetitionDoesNotAllocate) {
  auto out = render_template("{{ 'x' * 1000000000000 }}");
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
  out = render_template("{{ [1, 2] * 1000000000000 }}");
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
}

TEST(ChatTemplateLimits, LoopIterations) {
  RenderOptions options = test_options();
  options.max_loop_iterations = 10000;
  auto out = render_template(
      "{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", "{}",
      options);
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
  out = render_template("{{ range(100000000000) | length }}", "{}", options);
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
}

TEST(ChatTemplateLimits, IntegerOverflowIsAnError) {
  auto out = render_template("{{ 9223372036854775807 + 1 }}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "OverflowError: integer overflow");
  EXPECT_FALSE(render_template("{{ 2 ** 64 }}").ok());
  EXPECT_FALSE(render_template("{{ 99999999999999999999 }}").ok());
}

TEST(ChatTemplateLimits, DeepNestingIsASyntaxError) {
  for (const std::string& open : {"(", "[", "{'a':", "not ", "-"}) {
    std::string close = open == "(" ? ")" : open == "[" ? "]" : open == "{'a':" ? "}" : "";
    std::string src = "{{ ";
    for (int i = 0; i < 5000; ++i) src += open;
    src += "1";
    for (int i = 0; i < 5000; ++i) src += close;
    src += " }}";
    auto out = render_template(src);
    ASSERT_FALSE(out.ok()) << open;
    EXPECT_NE(out.status().message().find("TemplateSyntaxError"), std::string::npos) << open;
  }
  std::string blocks;
  for (int i = 0; i < 5000; ++i) blocks += "{% if true %}";
  EXPECT_FALSE(render_template(blocks).ok());
}

// Left-associative chains nest the tree one level per operator without recursing in the
// parser; before they counted against the nesting limit, evaluating (or just destroying) a
// 50k-link chain overflowed the native stack.
TEST(ChatTemplateLimits, LongOperatorChainsAreASyntaxError) {
  const std::vector<std::string> links = {" ~ 1",  " + 1",   " * 1",        " ** 1",
                                          " or 1", " and 1", "|string",     ".a",
                                          "[0]",   "()",     " if 1 else 1"};
  for (const std::string& link : links) {
    std::string src = "{{ 1";
    for (int i = 0; i < 50000; ++i) src += link;
    src += " }}";
    auto out = render_template(src);
    ASSERT_FALSE(out.ok()) << link;
    EXPECT_NE(out.status().message().find("nesting too deep"), std::string::npos) << link;
  }
  auto out =
      render_template("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}");
  EXPECT_NE(out.status().message().find("nesting too deep"), std::string::npos);
}

TEST(ChatTemplateLimits, ModerateChainsWork) {
  std::string src = "{{ ('a'";
  for (int i = 0; i < 60; ++i) src += " ~ 'a'";
  src += ")|length }}";
  auto out = render_template(src);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "61");
}

TEST(ChatTemplateLimits, ModerateNestingWorks) {
  std::string src = "{{ ";
  for (int i = 0; i < 50; ++i) src += "(";
  src += "1";
  for (int i = 0; i < 50; ++i) src += ")";
  src += " }}";
  auto out = render_template(src);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "1");
}

TEST(ChatTemplateRobustness, MalformedTemplates) {
  const char* bad[] = {
      "{{",
      "{%",
      "{#",
      "{{ }}",
      "{% %}",
      "{% if %}",
      "{% for x in %}{% endfor %}",
      "{% for in xs %}{% endfor %}",
      "{% set %}",
      "{% set = 1 %}",
      "{% macro %}{% endmacro %}",
      "{% macro m( %}{% endmacro %}",
      "{% call %}{% endcall %}",
      "{% call m %}{% endcall %}",
      "{% filter %}{% endfilter %}",
      "{% endfor %}",
      "{% else %}",
      "{% raw %}",
      "{{ 'abc }}",
      "{{ x | }}",
      "{{ x is }}",
      "{{ x[ }}",
      "{{ x. }}",
      "{{ (1, }}",
      "{{ {1: }}",
      "{{ 1 if }}",
      "{{ f(a=) }}",
      "{{ f(**) }}",
      "{{ ) }}",
      "{{ 1 2 }}",
      "{% if x %}{% elif %}{% endif %}",
      "{{ x | tojson( }}",
      "{% set ns.x %}",
      "{{ @ }}",
      "{% continue %}",
      "{% macro m(a=1, b) %}{% endmacro %}",
      "{{ 1e }}",
      "{{ 0x }}",
      "{{ '\\x4' }}",
      "{% generation %}",
      "{% block %}{% endblock %}",
  };
  for (const char* src : bad) {
    auto out = render_template(src);
    EXPECT_FALSE(out.ok()) << src;
  }
}

TEST(ChatTemplateRobustness, SyntaxErrorsNameTheLine) {
  auto out = render_template("line1\n{{ x }}\n{% if %}");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("(line 3)"), std::string::npos) << out.status().message();
  out = render_template("a\n\n{% break %}");
  EXPECT_EQ(out.status().message(), "TemplateSyntaxError: 'break' outside of a loop (line 3)");
}

TEST(ChatTemplateRobustness, RandomBytesNeverCrash) {
  std::mt19937 rng(1234);
  const std::string alphabet = "{}%#-+()[]|.,:'\"=<>!~*/ \n\tabcxyz019_ifendforsetmacro";
  for (int n = 0; n < 3000; ++n) {
    std::string src;
    size_t len = rng() % 60;
    for (size_t i = 0; i < len; ++i) {
      src += (rng() % 10 == 0) ? static_cast<char>(rng() % 256) : alphabet[rng() % alphabet.size()];
    }
    auto out = render_template(src, R"({"x": [1, {"a": "b"}], "xs": "s"})");
    (void)out;  // any Status is fine; the point is no crash / hang
  }
}

// Found by the fuzzer (tests/fuzz/jinja_template_fuzz.cpp): a format field index past size_t
// threw out of std::stoul (terminating the process); floats past int64 were cast to it
// (undefined behaviour, garbage in Release).
TEST(ChatTemplateRobustness, NumbersPastInt64) {
  const char* errors[] = {
      "{{ '{99999999999999999999}'.format(1) }}",
      "{{ '{0[99999999999999999999]}'.format([1]) }}",
      "{{ '{0[99999999999999999999]}'.format({}) }}",
      "{{ '%d' % 3.14e159 }}",
      "{{ '%x' % (1e300 * 1e300) }}",
      "{{ 9223372036854775807 | round(-1) }}",
  };
  for (const char* src : errors) {
    auto out = render_template(src);
    EXPECT_FALSE(out.ok()) << src << " gave " << *out;
  }
  auto out = render_template("{{ 5 | round(-400) }} {{ 5.5 | round(-400) }}");
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "0 0.0");
}

// Found by a fuzz campaign (tests/fuzz/jinja_template_fuzz.cpp): a str method's start / end
// that was not an integer was read as one (std::bad_variant_access terminated the process).
TEST(ChatTemplateRobustness, NonIntegerSliceIndicesAreTypeErrors) {
  for (const char* src : {"{{ 'abc'.startswith('a', 'x') }}", "{{ 'abc'.endswith('c', 0, 'y') }}",
                          "{{ 'abc'.find('b', [1]) }}", "{{ 'abc'.rindex('b', 0, {}) }}",
                          "{{ 'abc'.count('b', 1.5) }}"}) {
    auto out = render_template(src);
    ASSERT_FALSE(out.ok()) << src << " gave " << *out;
    EXPECT_NE(out.status().message().find("slice indices must be integers or None"),
              std::string::npos)
        << out.status().to_string();
  }
  auto out = render_template(
      "{{ 'abc'.startswith('b', 1) }} {{ 'abc'.endswith('b', none, -1) }} "
      "{{ 'abcb'.count('b', true) }} {{ 'abc'.find('c', -1) }}");
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "True True 2 2");
}

TEST(ChatTemplateRobustness, InvalidUtf8PassesThrough) {
  auto out = render_template("a\xff{{ 'b\xfe' }}{{ s | length }}", R"({"s": "ok"})");
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out,
            "a\xff"
            "b\xfe"
            "2");
}

}  // namespace
}  // namespace sgl::tokenizer
