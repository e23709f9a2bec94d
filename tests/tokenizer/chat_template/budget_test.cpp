// Render budget: native stack, value sizes checked while building, total work, cancellation and
// deadline. Each case is a template that crashed, hung or allocated without bound before.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <regex>
#include <string>

#include "tokenizer/chat_template/test_util.h"

namespace sgl::tokenizer {
namespace {

// A kResourceExhausted error whose message contains `words`.
::testing::AssertionResult is_limit(const Result<std::string>& out, const std::string& words) {
  if (!out.ok() && out.status().code() == StatusCode::kResourceExhausted &&
      out.status().message().find(words) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "expected a limit error with '" << words << "', got "
                                       << (out.ok() ? "success" : out.status().to_string());
}

// `inner` inside `n` nested `{% for z in [1] %}` blocks (or `open`/`close` pairs).
std::string nest(std::string inner, int n, const std::string& open = "{% for z in [1] %}",
                 const std::string& close = "{% endfor %}") {
  for (int i = 0; i < n; ++i) inner = open + inner + close;
  return inner;
}

// Within the call-depth and nesting limits, each of these overflowed the native stack (an
// 8 MiB one, in Release): every level of recursion runs 60 to 150 blocks deep.
TEST(ChatTemplateBudget, NativeStackGuard) {
  const std::string macro_open = "{% macro f(n) %}{% if n > 0 %}";
  const std::string macro_close = "{% endif %}{% endmacro %}{{ f(199) }}";
  const std::string cases[] = {
      macro_open + nest("{{ f(n - 1) }}", 60) + macro_close,
      macro_open + nest("{{ f(n - 1) }}", 60, "{% filter upper %}", "{% endfilter %}") +
          macro_close,
      macro_open + nest("{{ f(n - 1) }}", 150, "{% with y = 1 %}", "{% endwith %}") + macro_close,
      macro_open + nest("{{ f(n - 1) }}", 150, "{% if true %}", "{% endif %}") + macro_close,
      macro_open + nest("{% call f(n - 1) %}{% endcall %}", 60) + macro_close,
      // Recursion through a recursive loop and through caller().
      "{% set l = [1] %}{% for i in [l] recursive %}{% set outer = loop %}" +
          nest("{{ outer([i]) }}", 60) + "{% endfor %}",
      "{% macro m() %}{{ caller() }}{% endmacro %}{% macro r(n) %}{% if n > 0 %}{% call m() %}" +
          nest("{{ r(n - 1) }}", 150) + "{% endcall %}{% endif %}{% endmacro %}{{ r(60) }}",
  };
  for (const std::string& src : cases) {
    auto out = render_template(src);
    EXPECT_TRUE(is_limit(out, "native stack limit of 4194304 bytes")) << src.substr(0, 150);
  }
}

TEST(ChatTemplateBudget, DefaultStackAdmitsTheFullCallDepth) {
  auto out = render_template(
      "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% else %}bottom{% endif %}{% endmacro %}"
      "{{ f(199) }}");
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "bottom");
}

TEST(ChatTemplateBudget, StackLimitIsConfigurable) {
  RenderOptions options = test_options();
  options.max_stack_bytes = 64 << 10;
  auto out = render_template(
      "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(150) }}", "{}",
      options);
  EXPECT_TRUE(is_limit(out, "native stack limit of 65536 bytes"));
}

// The size a limit error reports: how far the value got before the check stopped it.
size_t reported_size(const Result<std::string>& out) {
  std::smatch m;
  static const std::regex kSize(R"(\(a value of (\d+) bytes\))");
  if (out.ok() || !std::regex_search(out.status().message(), m, kSize)) return SIZE_MAX;
  return std::stoull(m[1]);
}

// Each of these built its whole ~50 MB result before comparing it with the limit (GBs with a
// longer format string); now the check runs as it builds, so it stops just past 1 MiB.
TEST(ChatTemplateBudget, ValuesAreCheckedWhileBuilding) {
  RenderOptions options = test_options();
  options.max_output_bytes = 1 << 20;
  const char* cases[] = {
      "{{ ('{:>9999}' * 5000).format(*range(5000)) }}",
      "{{ ('%9999s' * 5000) % ((1,) * 5000) }}",
      "{{ ('%9999s' * 5000) | format(*range(5000)) }}",
      "{{ (('xxxxxxxxx\n') * 5000) | indent(9999) }}",
      "{{ range(5000) | list | tojson(indent=' ' * 9999) }}",
      "{{ strftime_now('%c' * 500000) }}",
  };
  for (const char* src : cases) {
    auto out = render_template(src, "{}", options);
    EXPECT_TRUE(is_limit(out, "output limit of 1048576 bytes")) << src;
    EXPECT_LE(reported_size(out), size_t{2} << 20) << src;
  }
}

// A case change re-encodes its string: each invalid UTF-8 byte becomes U+FFFD (3 bytes).
TEST(ChatTemplateBudget, GrownStringsAreChecked) {
  RenderOptions options = test_options();
  options.max_output_bytes = 1 << 20;
  auto out = render_template("{% set s = '\xff' * 400000 %}{% set t = s.upper() %}{{ s | length }}",
                             "{}", options);
  EXPECT_TRUE(is_limit(out, "output limit of 1048576 bytes"));
}

// An error message quoted the whole repr of the offending value: a value shared 2^22 times.
TEST(ChatTemplateBudget, ErrorMessagesAreBounded) {
  auto out = render_template(
      "{% set ns = namespace(a=[1]) %}{% for i in range(22) %}{% set ns.a = [ns.a, ns.a] %}"
      "{% endfor %}{{ [1][ns.a].x }}");
  ASSERT_FALSE(out.ok());
  EXPECT_LT(out.status().message().size(), 2000u);
  EXPECT_NE(out.status().message().find("list object has no element [[[["), std::string::npos)
      << out.status().message().substr(0, 200);
}

// A list's values count against the single-value limit before it is built: range() made a
// 320 MB list here, ten times over.
TEST(ChatTemplateBudget, ListsAreSizedBeforeTheyAreBuilt) {
  auto out = render_template("{% for i in range(10) %}{% set x = range(10000000) %}{% endfor %}");
  EXPECT_TRUE(is_limit(out, "output limit of 67108864 bytes (a value of 320000000 bytes)"));
  RenderOptions options = test_options();
  options.max_output_bytes = 1 << 20;
  const char* cases[] = {
      "{{ range(100000) | length }}",
      "{{ ([1] * 100000) | length }}",
      "{{ ('x' * 200000) | list | length }}",
      "{{ (',' * 200000).split(',') | length }}",
      "{{ ('\n' * 200000).splitlines() | length }}",
      "{{ [1] | batch(100000, 0) | list | length }}",
  };
  for (const char* src : cases) {
    EXPECT_TRUE(is_limit(render_template(src, "{}", options), "output limit of 1048576 bytes"))
        << src;
  }
}

// O(n^2) string building rendered for hours within every other limit.
TEST(ChatTemplateBudget, QuadraticStringBuildingHitsTheWorkLimit) {
  auto out = render_template(
      "{% set ns = namespace(s='') %}{% for i in range(1000000) %}"
      "{% set ns.s = ns.s ~ 'xxxxxxxx' %}{% endfor %}{{ ns.s | length }}");
  EXPECT_TRUE(is_limit(out, "work limit of 1073741824 bytes"));
}

// A quadratic scan of a long conversation, as several shipped templates make (Command-R7B:
// 1M iterations for 1000 messages), renders within the default work limit, as in jinja2.
TEST(ChatTemplateBudget, QuadraticScansOfLongConversationsFit) {
  std::string messages = "[";
  for (int i = 0; i < 800; ++i) messages += std::string(i ? "," : "") + R"({"role":"user"})";
  auto out = render_template(
      "{% for m in messages %}{% for p in messages %}{% if p.role == 'tool' %}{% endif %}"
      "{% endfor %}{% endfor %}ok",
      R"({"messages":)" + messages + "]}");
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out, "ok");
}

TEST(ChatTemplateBudget, WorkLimitCoversCopiesCallsAndSteps) {
  RenderOptions options = test_options();
  options.max_work_bytes = 16 << 20;
  const char* cases[] = {
      // Repeated big values, each within the single-value limit.
      "{% for i in range(100) %}{% set x = range(100000) %}{% endfor %}",
      "{% for i in range(100) %}{% set x = 'a'.center(1000000) %}{% endfor %}",
      "{% set s = 'x' * 1000000 %}{% for i in range(100) %}{% set x = s | replace('y', 'z') %}"
      "{% endfor %}",
      "{% set s = 'x' * 1000000 %}{% for i in range(100) %}{% if s | length %}{% endif %}"
      "{% endfor %}",
      "{% set s = 'x' * 1000000 %}{% for i in range(100) %}{% if 'y' in s %}{% endif %}"
      "{% endfor %}",
      // Exponential macro fan-out: no loop, shallow recursion (4M calls).
      "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
      "{{ f(22) }}",
      // Cheap steps, many times.
      "{% for i in range(1000) %}{% for j in range(1000) %}{{ '' }}{% endfor %}{% endfor %}",
      // A value shared exponentially: [x, x] nested n deep is 2^n items to compare.
      "{% set ns = namespace(a=[1], b=[1]) %}{% for i in range(22) %}"
      "{% set ns.a = [ns.a, ns.a] %}{% set ns.b = [ns.b, ns.b] %}{% endfor %}"
      "{{ ns.a == ns.b }}",
  };
  for (const char* src : cases) {
    EXPECT_TRUE(is_limit(render_template(src, "{}", options), "work limit of 16777216 bytes"))
        << src;
  }
}

TEST(ChatTemplateBudget, CancelledBeforeTheRender) {
  std::atomic<bool> cancelled{true};
  RenderOptions options = test_options();
  options.cancelled = &cancelled;
  auto out = render_template("hello", "{}", options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "chat template render cancelled");
}

// The flag is raised during the render (by the clock hook that strftime_now() calls): the
// render notices within a few steps instead of running its 100k iterations.
TEST(ChatTemplateBudget, CancelledDuringTheRender) {
  std::atomic<bool> cancelled{false};
  RenderOptions options = test_options();
  options.cancelled = &cancelled;
  options.now = [&cancelled] {
    cancelled = true;
    return std::tm{};
  };
  auto out = render_template(
      "{% for i in range(100000) %}{% if i == 100 %}{{ strftime_now('%Y') }}{% endif %}"
      "{% endfor %}done",
      "{}", options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "chat template render cancelled");
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
}

TEST(ChatTemplateBudget, DeadlineAlreadyPassed) {
  RenderOptions options = test_options();
  options.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  auto out = render_template("hello", "{}", options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "chat template render deadline exceeded");
}

// Nine million iterations take many seconds; with every other limit lifted only the deadline
// stops them.
TEST(ChatTemplateBudget, DeadlinePassesDuringTheRender) {
  RenderOptions options = test_options();
  options.max_work_bytes = SIZE_MAX;
  options.max_loop_iterations = INT64_MAX;
  options.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  auto out = render_template(
      "{% for i in range(3000) %}{% for j in range(3000) %}{% endfor %}{% endfor %}done", "{}",
      options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "chat template render deadline exceeded");
}

// `{% set ns.<attr> = <wrap(ns.attr) ten times> %}` `iterations` times: a value nested
// 10 * iterations deep.
std::string nested_value(const std::string& attr, const std::string& open, const std::string& close,
                         int iterations) {
  std::string wrapped = nest("ns." + attr, 10, open, close);
  return "{% set ns = namespace(a=[], b=[], t=(1,), j=1) %}{% for i in range(" +
         std::to_string(iterations) + ") %}{% set ns." + attr + " = " + wrapped + " %}{% endfor %}";
}

// Values nested 200k deep overflowed the stack when destroyed; 2000 deep, compared with == or
// hashed, they gave an answer where Python raises RecursionError.
TEST(ChatTemplateBudget, DeeplyNestedValues) {
  auto out = render_template(nested_value("a", "[", "]", 20000) + "done");
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "done");
  out = render_template(nested_value("j", "joiner(", ")", 20000) + "done");
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  const std::string two = nested_value("a", "[", "]", 200) + "{% for i in range(200) %}" +
                          "{% set ns.b = " + nest("ns.b", 10, "[", "]") + " %}{% endfor %}";
  out = render_template(two + "{{ ns.a == ns.b }}");
  EXPECT_EQ(out.status().message(),
            "RecursionError: maximum recursion depth exceeded in comparison");
  out = render_template(nested_value("t", "(", ",)", 200) + "{{ {ns.t: 1} }}");
  EXPECT_EQ(out.status().message(), "TypeError: unhashable type: 'tuple'");
}

// `{% set ns.me = ns %}` is a reference cycle: the namespace and what it held outlived the
// render (a leak per request).
TEST(ChatTemplateBudget, NamespaceCyclesDoNotLeak) {
  auto sentinel = std::make_shared<int>(0);
  {
    jinja::DictData context;
    context.set(
        "f", jinja::Value::callable("f", [sentinel](jinja::Interpreter&, const jinja::CallArgs&) {
          return Result<jinja::Value>(jinja::Value::none());
        }));
    auto tmpl = ChatTemplate::parse(
        "{% set ns = namespace(f=f) %}{% set ns.me = ns %}{% for i in [1] %}"
        "{{ loop.changed(loop) }}{% endfor %}");
    ASSERT_TRUE(tmpl.ok());
    auto out = tmpl->render(context, test_options());
    ASSERT_TRUE(out.ok()) << out.status().to_string();
  }
  EXPECT_EQ(sentinel.use_count(), 1);
}

}  // namespace
}  // namespace sgl::tokenizer
