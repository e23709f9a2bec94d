// libFuzzer harness: a Jinja chat template and a small JSON context, parsed and rendered under
// tight budgets. Input: template source, then optionally a NUL byte and the context as a JSON
// object (a default chat with tools is used when it is missing or is not an object).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string_view>

#include "tokenizer/chat_template/chat_template.h"
#include "tokenizer/chat_template/json_value.h"

namespace {

constexpr std::string_view kDefaultContext = R"({
  "messages": [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"t\": 21}"},
    {"role": "assistant", "content": "It is 21 degrees.", "reasoning_content": "Easy."}
  ],
  "tools": [{"type": "function", "function": {"name": "get_weather",
    "description": "Get the weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
  "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"
})";

std::tm fixed_clock() {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 10;
  tm.tm_mday = 21;
  return tm;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t nul = input.find('\0');
  std::string_view source = input.substr(0, nul);
  std::string_view context =
      nul == std::string_view::npos ? kDefaultContext : input.substr(nul + 1);

  auto tmpl = sgl::tokenizer::ChatTemplate::parse(source);
  if (!tmpl.ok()) return 0;

  sgl::tokenizer::RenderOptions options;
  options.max_output_bytes = size_t{1} << 20;
  options.max_work_bytes = size_t{16} << 20;
  options.max_loop_iterations = 100'000;
  options.now = fixed_clock;
  // A safety net only: the work budget ends every render long before.
  options.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);

  auto value = sgl::tokenizer::jinja::value_from_json(context);
  if (!value.ok() || !value->is_dict()) {
    value = sgl::tokenizer::jinja::value_from_json(kDefaultContext);
  }
  auto out = tmpl->render(value->dict_data(), options);
  (void)out;  // any Status is fine: the point is no crash, hang or unbounded memory
  return 0;
}
