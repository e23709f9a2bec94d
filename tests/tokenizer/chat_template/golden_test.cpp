// Golden parity: every template in testdata/chat_templates rendered for the five conversations
// of golden/chat_templates.json must match transformers' apply_chat_template byte for byte,
// and every case where the template raises must raise (with the same message).
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "test_paths.h"
#include "tokenizer/chat_template/chat_template.h"
#include "tokenizer/chat_template/json_value.h"

namespace sgl::tokenizer {
namespace {

using Json = nlohmann::ordered_json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// NOTE: meta does not record the render date, but every golden that prints strftime_now()
// (Apertus, granite-3.3, Llama-3.2, Mistral-Small-3.2, muse-glimmer, gpt-oss, Solar) shows
// 2026-11-21, the day the goldens were generated. Pin the clock to it.
std::tm golden_clock() {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 10;  // November
  tm.tm_mday = 21;
  tm.tm_hour = 12;
  tm.tm_wday = 6;  // Saturday
  tm.tm_yday = 324;
  return tm;
}

// Python's message minus the exception class, which raise_exception() does not add.
std::string expected_message(const std::string& golden_error) {
  const std::string kTemplateError = "TemplateError: ";
  if (golden_error.rfind(kTemplateError, 0) == 0) return golden_error.substr(kTemplateError.size());
  return golden_error;
}

TEST(ChatTemplateGolden, AllTemplatesAllCases) {
  const std::string dir = sgl::test::testdata_dir().string();
  Json golden = Json::parse(read_file(dir + "/golden/chat_templates.json"));
  const Json& cases = golden["meta"]["cases"];
  const std::string bos = golden["meta"]["bos_token"];
  const std::string eos = golden["meta"]["eos_token"];
  RenderOptions options;
  options.now = golden_clock;

  int ok_total = 0, ok_passed = 0, raise_total = 0, raise_passed = 0, raise_same_message = 0;
  for (const auto& [template_name, renders] : golden["templates"].items()) {
    std::string source = read_file(dir + "/chat_templates/" + template_name);
    ASSERT_FALSE(source.empty()) << template_name;
    auto tmpl = ChatTemplate::parse(source);
    for (const auto& [case_name, expected] : renders.items()) {
      const Json& c = cases[case_name];
      bool expect_ok = expected["ok"].get<bool>();
      (expect_ok ? ok_total : raise_total)++;
      if (!tmpl.ok()) {
        ADD_FAILURE() << template_name << " does not parse: " << tmpl.status().to_string();
        continue;
      }
      ChatTemplateInputs inputs;
      inputs.messages = jinja::value_from_json(c["messages"].dump()).value();
      if (c.contains("tools")) inputs.tools = jinja::value_from_json(c["tools"].dump()).value();
      inputs.add_generation_prompt = c["add_generation_prompt"].get<bool>();
      inputs.bos_token = bos;
      inputs.eos_token = eos;
      auto out = tmpl->apply(inputs, options);
      if (expect_ok) {
        if (!out.ok()) {
          ADD_FAILURE() << template_name << " / " << case_name
                        << " raised: " << out.status().to_string();
        } else if (*out != expected["text"].get<std::string>()) {
          ADD_FAILURE() << template_name << " / " << case_name << " differs.\n--- expected\n"
                        << expected["text"].get<std::string>() << "\n--- got\n"
                        << *out << "\n---";
        } else {
          ++ok_passed;
        }
        continue;
      }
      std::string want = expected_message(expected["error"].get<std::string>());
      if (out.ok()) {
        ADD_FAILURE() << template_name << " / " << case_name << " should raise \"" << want
                      << "\" but rendered:\n"
                      << *out;
        continue;
      }
      ++raise_passed;
      if (out.status().message() == want) {
        ++raise_same_message;
      } else {
        std::cout << "[ message ] " << template_name << " / " << case_name << ": want \"" << want
                  << "\", got \"" << out.status().message() << "\"\n";
      }
    }
  }
  std::cout << "[ golden  ] ok renders " << ok_passed << "/" << ok_total << ", raising cases "
            << raise_passed << "/" << raise_total << " (same message " << raise_same_message
            << ")\n";
  EXPECT_EQ(ok_total, 325);
  EXPECT_EQ(raise_total, 25);
  EXPECT_EQ(ok_passed, ok_total);
  EXPECT_EQ(raise_passed, raise_total);
  EXPECT_EQ(raise_same_message, raise_total);
}

}  // namespace
}  // namespace sgl::tokenizer
