// Token masks of free text under triggered tags, with the Llama-3 tokenizer (128,256 ids): the
// grammar of a strict tool under tool_choice auto (qwen25's <tool_call>), as a request sees it.
//
//   build/cpu/bench/triggered_tags_bench [tokenizer dir] [tokens]
//
// A generation is simulated: random allowed tokens that do not start a call, a whole call
// written byte by byte half-way, then free text again. "cold" is the first request with the
// grammar (each position's mask computed on first use), "warm" the same tokens again on the same
// compiled grammar.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "function_call/function_tools.h"
#include "function_call/tool_constraint.h"
#include "grammar/ebnf_parser.h"
#include "grammar/grammar_matcher.h"
#include "grammar/llama3_vocab.h"

namespace {

using Clock = std::chrono::steady_clock;

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

void report(const char* name, const std::vector<double>& us) {
  double sum = 0;
  for (double x : us) sum += x;
  std::printf("%-5s mask us: first %.1f  mean %.1f  p50 %.1f  p99 %.1f  max %.1f\n", name,
              us.empty() ? 0 : us[0], us.empty() ? 0 : sum / us.size(), percentile(us, 0.5),
              percentile(us, 0.99), percentile(us, 1.0));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path =
      argc > 1 && argv[1][0] != 0 ? argv[1] : sgl::grammar::test::default_llama3_path();
  const int max_tokens = argc > 2 ? std::atoi(argv[2]) : 400;
  auto tokenizer = sgl::grammar::test::load_llama3_vocab(path);
  if (tokenizer == nullptr) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 1;
  }
  auto tools = sgl::function_call::read_function_tools(R"([{"type": "function", "function": {
      "name": "find_city", "strict": true, "parameters": {"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 12}}, "required": ["name"]}}}])");
  auto source = sgl::function_call::auto_tool_call_grammar({.tools = *tools, .parser = "qwen25"});
  if (!source.ok()) {
    std::fprintf(stderr, "%s\n", source.status().to_string().c_str());
    return 1;
  }
  const auto t0 = Clock::now();
  auto compiled = sgl::grammar::CompiledGrammar::compile(
      std::move(sgl::grammar::parse_ebnf(*source)).value(), tokenizer);
  const double compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!compiled.ok()) {
    std::fprintf(stderr, "%s\n", compiled.status().to_string().c_str());
    return 1;
  }
  const std::string call =
      "<tool_call>\n{\"name\": \"find_city\", \"arguments\": {\"name\": \"Paris\"}}\n</tool_call>";
  std::mt19937 rng(1);
  std::vector<double> cold, warm;
  std::vector<int32_t> picks;
  size_t allowed_sum = 0;
  {
    sgl::grammar::GrammarMatcher m(*compiled);
    std::vector<uint32_t> mask(m.bitmask_words());
    for (int step = 0; step < max_tokens; ++step) {
      if (step == max_tokens / 2) {
        if (!m.accept_bytes(call)) return std::fprintf(stderr, "call refused\n"), 1;
        continue;
      }
      const auto s = Clock::now();
      m.fill_next_token_bitmask(mask.data());
      cold.push_back(std::chrono::duration<double, std::micro>(Clock::now() - s).count());
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < tokenizer->num_tokens(); ++id) {
        if (((mask[id >> 5] >> (id & 31)) & 1) &&
            tokenizer->token_bytes(id).find('<') == std::string::npos) {
          allowed.push_back(id);
        }
      }
      allowed_sum += allowed.size();
      const int32_t pick = allowed[rng() % allowed.size()];
      picks.push_back(pick);
      m.accept_token(pick);
    }
  }
  {
    sgl::grammar::GrammarMatcher m(*compiled);
    std::vector<uint32_t> mask(m.bitmask_words());
    for (size_t i = 0; i < picks.size(); ++i) {
      if (i == static_cast<size_t>(max_tokens / 2)) m.accept_bytes(call);
      const auto s = Clock::now();
      m.fill_next_token_bitmask(mask.data());
      warm.push_back(std::chrono::duration<double, std::micro>(Clock::now() - s).count());
      m.accept_token(picks[i]);
    }
  }
  std::printf(
      "vocab %d ids; grammar compiled in %.2f ms; %zu masks, %.0f tokens allowed on "
      "average (those without '<')\n",
      tokenizer->num_tokens(), compile_ms, cold.size(),
      static_cast<double>(allowed_sum) / std::max<size_t>(1, cold.size()));
  report("cold", cold);
  report("warm", warm);
  return 0;
}
