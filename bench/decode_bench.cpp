// CPU decode throughput: tokens/s of greedy generation through BatchGenerator.
// Run: build/cpu/bench/decode_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>

#include "engine/batch_generator.h"
#include "runner/model_runner.h"
#include "test_data.h"

namespace sgl {
namespace {

// A test model by name, or the default model (SmolLM2 GGUF) from the fetch script's cache.
std::filesystem::path model_dir(const char* name) {
  return std::string(name) == "smollm2" ? test::smollm2_gguf_path() : test::model_dir(name);
}

// args: batch size, prompt length; generates 128 tokens per request.
void decode(benchmark::State& state, const char* model) {
  const int batch = static_cast<int>(state.range(0));
  const int prompt_len = static_cast<int>(state.range(1));
  constexpr int kNewTokens = 128;
  runner::ModelRunnerOptions options;
  options.max_batch_size = batch;
  options.max_num_tokens = 4096;
  options.num_kv_slots = batch * (prompt_len + kNewTokens) + 1;
  auto runner = runner::ModelRunner::create(model_dir(model), options);
  if (!runner.ok()) {
    state.SkipWithError(runner.status().to_string().c_str());
    return;
  }
  engine::BatchGenerator generator(**runner, {});
  std::vector<engine::GenerateRequest> requests(batch);
  for (int b = 0; b < batch; ++b) {
    for (int i = 0; i < prompt_len; ++i) requests[b].input_ids.push_back(3 + (i * 7 + b) % 200);
    requests[b].max_new_tokens = kNewTokens;
    requests[b].sampling.temperature = 0.f;
    requests[b].ignore_eos = true;
  }
  for (auto _ : state) {
    auto out = generator.generate(requests);
    benchmark::DoNotOptimize(out);
  }
  state.counters["tok/s"] = benchmark::Counter(
      static_cast<double>(batch) * kNewTokens * state.iterations(), benchmark::Counter::kIsRate);
}

BENCHMARK_CAPTURE(decode, stories260K, "stories260K")
    ->Args({1, 16})
    ->Args({8, 16})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(decode, tiny_llama, "tiny-llama")
    ->Args({1, 16})
    ->Args({8, 16})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// The default model (run scripts/fetch_default_model.sh first; skipped when absent).
BENCHMARK_CAPTURE(decode, smollm2_135m, "smollm2")
    ->Args({1, 16})
    ->Args({8, 16})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(2);

}  // namespace
}  // namespace sgl

BENCHMARK_MAIN();
