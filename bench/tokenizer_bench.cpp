// Tokenizer encode throughput (MB/s, one thread) on ~1 MiB of mixed-language text built from the
// vector strings, for the Llama-3 and Qwen3 tokenizers. scripts/bench_tokenizer.sh runs this
// and HF tokenizers on the same text (scripts/bench_tokenizer_hf.py builds it identically).
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace sgl::tokenizer {
namespace {

const std::string kData = sgl::test::testdata_dir().string();

// All vector strings of the four sets joined by "\n", repeated to at least 1 MiB.
std::string mixed_text() {
  std::string joined;
  for (const char* name : {"llama-bpe", "qwen2", "gpt-2", "llama-spm"}) {
    std::ifstream in(kData + "/tokenizers/vectors/" + name + ".inp", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string all = ss.str(), sep = "\n__ggml_vocab_test__\n";
    size_t start = 0;
    for (size_t at; (at = all.find(sep, start)) != std::string::npos; start = at + sep.size()) {
      joined += all.substr(start, at - start) + "\n";
    }
  }
  std::string text;
  while (text.size() < (1u << 20)) text += joined;
  return text;
}

void encode(benchmark::State& state, const char* dir) {
  auto tok = Tokenizer::from_dir(kData + "/tokenizers/" + dir);
  if (!tok.ok()) {
    state.SkipWithError(tok.status().to_string().c_str());
    return;
  }
  const std::string text = mixed_text();
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = (*tok)->encode(text, {.add_special_tokens = false});
    tokens = ids.size();
    benchmark::DoNotOptimize(ids);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
}

BENCHMARK_CAPTURE(encode, llama3_1, "llama3_1")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(encode, qwen3, "qwen3")->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace
}  // namespace sgl::tokenizer

BENCHMARK_MAIN();
