// ChatTemplate API: apply(), apply_chat_template(), render_json(), options and thread safety.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include "test_paths.h"
#include "tokenizer/chat_template/chat_template.h"
#include "tokenizer/chat_template/json_value.h"
#include "tokenizer/chat_template/test_util.h"

namespace sgl::tokenizer {
namespace {

constexpr const char* kChatMl =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ChatTemplateApi, ApplyWithInputs) {
  auto tmpl = ChatTemplate::parse(kChatMl);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().to_string();
  ChatTemplateInputs inputs;
  inputs.messages = *jinja::value_from_json(R"([{"role": "user", "content": "Hi"}])");
  inputs.add_generation_prompt = true;
  auto out = tmpl->apply(inputs);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  inputs.add_generation_prompt = false;
  EXPECT_EQ(*tmpl->apply(inputs), "<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplateApi, StandardVariables) {
  auto tmpl = ChatTemplate::parse(
      "{{ bos_token }}|{{ eos_token }}|{{ tools }}|{{ documents }}|{{ add_generation_prompt }}|"
      "{{ enable_thinking }}|{{ messages | length }}");
  ASSERT_TRUE(tmpl.ok());
  ChatTemplateInputs inputs;
  inputs.bos_token = "<s>";
  inputs.eos_token = "</s>";
  inputs.extra_context.set("enable_thinking", jinja::Value(false));
  EXPECT_EQ(*tmpl->apply(inputs), "<s>|</s>|None|None|False|False|0");
}

TEST(ChatTemplateApi, ApplyChatTemplateFromJson) {
  auto out = apply_chat_template(
      "{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
      "{% if tools %}{{ tools | map(attribute='function.name') | join(',') }}{% endif %}"
      "{% if enable_thinking is defined %}think={{ enable_thinking }}{% endif %}",
      R"([{"role": "user", "content": "Weather?"}])",
      R"([{"type": "function", "function": {"name": "get_weather"}}])", true, "<s>", "</s>",
      R"({"enable_thinking": true})");
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out,
            "<s>[user:Weather?]get_weather"
            "think=True");
  out = apply_chat_template("{{ tools is none }}", "[]", "", false, "", "");
  EXPECT_EQ(*out, "True");
  EXPECT_FALSE(apply_chat_template("{{ x }}", "not json", "", false, "", "").ok());
  EXPECT_FALSE(apply_chat_template("{{ x }}", "[]", "", false, "", "", "[1]").ok());
}

TEST(ChatTemplateApi, RenderJsonNeedsAnObject) {
  auto tmpl = ChatTemplate::parse("{{ a }}");
  ASSERT_TRUE(tmpl.ok());
  EXPECT_EQ(*tmpl->render_json(R"({"a": 1})"), "1");
  EXPECT_FALSE(tmpl->render_json("[1]").ok());
  EXPECT_EQ(tmpl->source(), "{{ a }}");
}

TEST(ChatTemplateApi, RaiseExceptionKeepsTheTemplateMessage) {
  auto out = render_template(
      "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}"
      "{% endif %}",
      R"({"messages": [{"role": "system", "content": "x"}]})");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(), "System role not supported");
}

TEST(ChatTemplateApi, ParseErrorsAreStatuses) {
  auto tmpl = ChatTemplate::parse("ok\n{% for x in xs %}");
  ASSERT_FALSE(tmpl.ok());
  EXPECT_EQ(tmpl.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tmpl.status().message(),
            "TemplateSyntaxError: Unexpected end of template. Jinja was looking for the following "
            "tags: 'endfor' or 'else'. (line 2)");
  tmpl = ChatTemplate::parse("{{ x | from_json }}");
  EXPECT_EQ(tmpl.status().message(),
            "TemplateAssertionError: No filter named 'from_json'. (line 1)");
  // Unknown filters inside if blocks only fail when reached, as in Jinja.
  tmpl = ChatTemplate::parse("{% if x %}{{ x | from_json }}{% endif %}ok");
  ASSERT_TRUE(tmpl.ok());
  EXPECT_EQ(*tmpl->render_json("{}"), "ok");
  EXPECT_EQ(tmpl->render_json(R"({"x": "1"})").status().message(),
            "TemplateRuntimeError: No filter named 'from_json' found.");
}

TEST(ChatTemplateApi, MutableSandboxOption) {
  const char* src =
      "{% set l = [1] %}{% set _ = l.append(2) %}{% set _ = l.extend([3, 4]) %}"
      "{% set _ = l.insert(0, 0) %}{{ l.pop() }}{{ l.pop(0) }}{{ l }}"
      "{% set d = {'a': 1} %}{% set _ = d.update({'b': 2}) %}{{ d.pop('a') }}{{ d }}"
      "{{ d.setdefault('c', 3) }}{{ d }}";
  auto out = render_template(src);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(),
            "SecurityError: access to attribute 'append' of 'list' object is unsafe.");
  RenderOptions options = test_options();
  options.immutable_sandbox = false;
  out = render_template(src, "{}", options);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "40[1, 2, 3]1{'b': 2}3{'b': 2, 'c': 3}");
}

TEST(ChatTemplateApi, SystemClock) {
  RenderOptions options;  // no fixed clock
  auto out = render_template("{{ strftime_now('%Y-%m-%d') }}", "{}", options);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(std::regex_match(*out, std::regex(R"(\d{4}-\d{2}-\d{2})"))) << *out;
}

TEST(ChatTemplateApi, InputsAreNotMutated) {
  auto tmpl = ChatTemplate::parse(
      "{% set ns = namespace(m=messages) %}{% set messages = messages + [{'role': 'x'}] %}"
      "{{ messages | length }}");
  ASSERT_TRUE(tmpl.ok());
  ChatTemplateInputs inputs;
  inputs.messages = *jinja::value_from_json(R"([{"role": "user", "content": "a"}])");
  EXPECT_EQ(*tmpl->apply(inputs), "2");
  EXPECT_EQ(inputs.messages.items().size(), 1u);
}

TEST(ChatTemplateApi, ConcurrentRenders) {
  std::string source =
      read_file(sgl::test::testdata_dir().string() + "/chat_templates/openai-gpt-oss-120b.jinja");
  ASSERT_FALSE(source.empty());
  auto tmpl = ChatTemplate::parse(source);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().to_string();
  ChatTemplateInputs inputs;
  inputs.messages = *jinja::value_from_json(
      R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
          {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Weather?"}])");
  inputs.tools = *jinja::value_from_json(
      R"([{"type": "function", "function": {"name": "get_weather", "description": "d",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])");
  inputs.add_generation_prompt = true;
  RenderOptions options = test_options();
  auto expected = tmpl->apply(inputs, options);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  std::vector<std::thread> threads;
  std::vector<int> mismatches(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto out = tmpl->apply(inputs, options);
        if (!out.ok() || *out != *expected) ++mismatches[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

TEST(ChatTemplateApi, TokenizerConfigTemplatesRender) {
  for (const char* dir : {"llama3_1", "qwen3"}) {
    std::string config = read_file(sgl::test::testdata_dir().string() + "/tokenizers/" + dir +
                                   "/tokenizer_config.json");
    auto parsed = jinja::value_from_json(config);
    ASSERT_TRUE(parsed.ok()) << dir;
    const jinja::Value* source = parsed->dict_data().find("chat_template");
    ASSERT_NE(source, nullptr) << dir;
    ASSERT_TRUE(source->is_string()) << dir;
    auto out = apply_chat_template(source->as_string(),
                                   R"([{"role": "system", "content": "S"},
                                       {"role": "user", "content": "Hello"}])",
                                   "", true, "<s>", "</s>", "", test_options());
    ASSERT_TRUE(out.ok()) << dir << ": " << out.status().to_string();
    EXPECT_NE(out->find("Hello"), std::string::npos) << dir;
  }
}

}  // namespace
}  // namespace sgl::tokenizer
