// Grammar engine speed with a real vocabulary: schema compile time and per-token mask time over
// the JSON Schema corpus of tests/grammar, with the Llama-3 tokenizer (128,256 ids).
//
//   build/cpu/bench/grammar_bench [tokenizer dir] [tokens per schema] [suite|legacy]
//
// Each schema is compiled (lazy masks), then a generation is simulated: each step fills the
// bitmask (timed) and accepts a random allowed token, steering towards the end after a while.
// "cold" is a fresh compiled grammar (positions' masks computed on first use, as the first
// request with a schema sees); "warm" replays the same tokens with a new matcher on the same
// compiled grammar (later requests with a cached schema). "mask digest" hashes every cold mask:
// two builds of the engine printing the same digest computed the same masks.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "grammar/grammar_matcher.h"
#include "grammar/json_schema_compiler.h"
#include "grammar/json_schemas.h"  // tests/grammar/json_schemas.h
#include "grammar/llama3_vocab.h"
#include "grammar/schema_suite.h"

namespace {

using Clock = std::chrono::steady_clock;
using sgl::grammar::CompiledGrammar;
using sgl::grammar::GrammarMatcher;
using sgl::grammar::TokenizerInfo;

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int position_report(const std::vector<std::string>& schemas,
                    const std::shared_ptr<const TokenizerInfo>& tokenizer) {
  struct Row {
    double us;
    size_t schema;
    std::string rule;
  };
  std::vector<Row> rows;
  std::vector<double> per_schema;
  // Every 16th schema: all positions of the whole suite take minutes.
  for (size_t i = 0; i < schemas.size(); i += 16) {
    auto g = sgl::grammar::json_schema_to_grammar(schemas[i]);
    auto compiled = CompiledGrammar::compile(std::move(g).value(), tokenizer);
    const auto& a = (*compiled)->automaton();
    double total = 0;
    for (sgl::grammar::StateId s = 0; s < a.num_states(); ++s) {
      if (a.byte_edges(s).empty()) continue;
      const double t = thread_cpu_us();
      (*compiled)->mask_cache().get(s);
      const double us = thread_cpu_us() - t;
      total += us;
      rows.push_back({us, i, a.rule_name(a.state_rule(s)) + "@" + std::to_string(s)});
    }
    per_schema.push_back(total / 1e3);
  }
  std::vector<double> us;
  double sum = 0;
  for (const Row& r : rows) {
    us.push_back(r.us);
    sum += r.us;
  }
  std::printf(
      "positions: %zu, cpu us: mean %.1f  p50 %.1f  p90 %.1f  p99 %.1f  max %.1f; "
      "all positions of a schema ms: median %.2f  p90 %.2f  max %.2f\n",
      rows.size(), sum / rows.size(), percentile(us, 0.5), percentile(us, 0.9),
      percentile(us, 0.99), percentile(us, 1.0), percentile(per_schema, 0.5),
      percentile(per_schema, 0.9), percentile(per_schema, 1.0));
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.us > b.us; });
  for (size_t k = 0; k < std::min<size_t>(12, rows.size()); ++k) {
    std::printf("  %8.1f us  schema %zu  %s\n", rows[k].us, rows[k].schema, rows[k].rule.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path =
      argc > 1 && argv[1][0] != 0 ? argv[1] : sgl::grammar::test::default_llama3_path();
  const int max_tokens = argc > 2 ? std::atoi(argv[2]) : 96;
  // "suite": tests/grammar/data/json_schemas.jsonl (the issue's schema suite); "legacy": the
  // 75 schemas of tests/grammar/json_schemas.h (the 2026-11-28 numbers).
  const std::string corpus = argc > 3 ? argv[3] : "suite";
  // "all": cold / warm masks and compile times, lazy and eager; "lazy": without the eager
  // compile (slow); "positions": each position's classification alone (CPU time of this thread,
  // steadier on a shared machine), the slowest listed.
  const std::string mode = argc > 4 ? argv[4] : "all";
  std::vector<std::string> schemas;
  if (corpus == "legacy") {
    schemas = sgl::grammar::test::schema_corpus();
  } else {
    for (const auto& s : sgl::grammar::test::load_schema_suite()) schemas.push_back(s.text);
  }
  auto t0 = Clock::now();
  auto tokenizer = sgl::grammar::test::load_llama3_vocab(path);
  if (tokenizer == nullptr) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 1;
  }
  const int32_t n = tokenizer->num_tokens();
  const std::vector<int32_t>& stops = tokenizer->stop_ids();
  const double load_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("vocab: %s, %d ids, %d trie nodes, loaded in %.1f ms; corpus %s\n", path.c_str(), n,
              tokenizer->trie().num_nodes(), load_ms, corpus.c_str());

  if (mode == "positions") return position_report(schemas, tokenizer);
  std::vector<double> compile_ms, precompute_ms, cold_us, warm_us;
  std::mt19937 rng(1);
  size_t total_tokens = 0, finished = 0, memory = 0;
  uint64_t digest = 0xCBF29CE484222325ULL;  // FNV-1a over the cold masks' words
  for (const std::string& schema : schemas) {
    t0 = Clock::now();
    auto g = sgl::grammar::json_schema_to_grammar(schema);
    if (!g.ok()) {
      std::fprintf(stderr, "%s\n%s\n", schema.c_str(), g.status().to_string().c_str());
      return 1;
    }
    auto compiled = CompiledGrammar::compile(std::move(g).value(), tokenizer);
    compile_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!compiled.ok()) {
      std::fprintf(stderr, "%s\n%s\n", schema.c_str(), compiled.status().to_string().c_str());
      return 1;
    }
    std::vector<int32_t> picks;
    {
      GrammarMatcher m(*compiled);
      std::vector<uint32_t> mask(m.bitmask_words());
      for (int step = 0; step < max_tokens && !m.is_terminated(); ++step) {
        const auto s = Clock::now();
        m.fill_next_token_bitmask(mask.data());
        cold_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - s).count());
        for (uint32_t w : mask) digest = (digest ^ w) * 0x100000001B3ULL;
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < n; ++id) {
          if ((mask[id >> 5] >> (id & 31)) & 1) allowed.push_back(id);
        }
        if (m.can_terminate() && step > max_tokens / 2) allowed = {stops[0]};
        // Past half the budget, prefer short tokens (closing JSON sooner).
        if (step > max_tokens / 2 && allowed.size() > 1) {
          std::vector<int32_t> small;
          for (int32_t id : allowed) {
            if (tokenizer->token_bytes(id).size() <= 1) small.push_back(id);
          }
          if (!small.empty()) allowed = small;
        }
        const int32_t pick = allowed[rng() % allowed.size()];
        picks.push_back(pick);
        m.accept_token(pick);
        ++total_tokens;
      }
      finished += m.is_terminated();
    }
    {
      GrammarMatcher m(*compiled);
      std::vector<uint32_t> mask(m.bitmask_words());
      for (int32_t pick : picks) {
        const auto s = Clock::now();
        m.fill_next_token_bitmask(mask.data());
        warm_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - s).count());
        m.accept_token(pick);
      }
    }
    memory += (*compiled)->memory_bytes();
    if (mode != "all") continue;
    // Eager: every position's mask at compile time.
    t0 = Clock::now();
    sgl::grammar::CompileOptions eager;
    eager.precompute_masks = true;
    auto pre =
        CompiledGrammar::compile(*sgl::grammar::json_schema_to_grammar(schema), tokenizer, eager);
    precompute_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0 : s / v.size();
  };
  std::printf("schemas: %zu, tokens: %zu, generations finished: %zu, lazy cache memory: %.1f MB\n",
              compile_ms.size(), total_tokens, finished, memory / 1e6);
  std::printf("compile (lazy masks)   ms: median %.2f  p90 %.2f  max %.2f\n",
              percentile(compile_ms, 0.5), percentile(compile_ms, 0.9),
              percentile(compile_ms, 1.0));
  std::printf("compile (all masks)    ms: median %.2f  p90 %.2f  max %.2f\n",
              percentile(precompute_ms, 0.5), percentile(precompute_ms, 0.9),
              percentile(precompute_ms, 1.0));
  std::printf("mask cold              us: mean %.1f  p50 %.1f  p99 %.1f  max %.1f\n", mean(cold_us),
              percentile(cold_us, 0.5), percentile(cold_us, 0.99), percentile(cold_us, 1.0));
  std::printf("mask warm              us: mean %.1f  p50 %.1f  p99 %.1f  max %.1f\n", mean(warm_us),
              percentile(warm_us, 0.5), percentile(warm_us, 0.99), percentile(warm_us, 1.0));
  std::printf("mask digest            %016llx\n", static_cast<unsigned long long>(digest));
  return 0;
}
