// StopRegexMatcher over a long generation: 8192 pieces of " wordy" (48 KB of text) fed one at a
// time, as a request's stop_regex sees its decoded output, per pattern. A bounded pattern is
// searched near the end of the text only; an unbounded one over all of it.
#include <benchmark/benchmark.h>

#include "tokenizer/stop_regex_matcher.h"

namespace sgl::tokenizer {
namespace {

void BM_StopRegexGeneration(benchmark::State& state, const char* pattern) {
  for (auto _ : state) {
    auto matcher = StopRegexMatcher::compile({pattern}).value();
    for (int i = 0; i < 8192; ++i) benchmark::DoNotOptimize(matcher.add(" wordy"));
  }
  state.SetItemsProcessed(state.iterations() * 8192);  // pieces
}

// No literal for PCRE2 to skip to, so every position of the text is a candidate start.
BENCHMARK_CAPTURE(BM_StopRegexGeneration, word_then_digit, "\\w{5}\\d")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_StopRegexGeneration, literal, "The end\\.")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_StopRegexGeneration, unbounded, "a.*zzz")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sgl::tokenizer

BENCHMARK_MAIN();
