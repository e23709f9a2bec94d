// Scheduler overhead per decode step with 256 running requests (no model: the batch result is
// made up), i.e. get_next_batch_to_run + ScheduleBatch -> ExecBatch + process_batch_result.
// Run: build/cpu/bench/scheduler_bench (Time = microseconds per decode step)
#include <benchmark/benchmark.h>

#include "engine/exec_batch.h"
#include "scheduler/scheduler.h"

namespace sgl::scheduler {
namespace {

void decode_step(benchmark::State& state) {
  const auto running = static_cast<int32_t>(state.range(0));
  const bool radix = state.range(1) != 0;
  SchedulerOptions options;
  options.max_running_requests = running;
  options.disable_radix_cache = !radix;
  const int32_t context = 4096;
  Scheduler scheduler(options, running * context + 1, context, {0}, 32000);
  for (int32_t i = 0; i < running; ++i) {
    GenerateRequest r;
    for (int32_t t = 0; t < 128; ++t) r.input_ids.push_back(1 + (i * 131 + t * 7) % 30000);
    r.max_new_tokens = context - 200;
    r.ignore_eos = true;
    r.sampling.temperature = 0.f;
    scheduler.add_request(static_cast<uint64_t>(i + 1), r);
  }
  sampling::SampleOutput out;
  std::vector<ReqUpdate> updates;
  auto run_step = [&] {
    NextBatch next = scheduler.get_next_batch_to_run();
    runner::ExecBatch exec = engine::to_exec_batch(*next.batch);
    benchmark::DoNotOptimize(exec);
    out.next_token_ids.assign(next.batch->entries.size(), 5);
    scheduler.process_batch_result(*next.batch, out);
    scheduler.take_updates(&updates);
    benchmark::DoNotOptimize(updates);
    return next.batch->mode;
  };
  while (run_step() != ForwardMode::kDecode) {
  }  // prefill everything first
  for (auto _ : state) run_step();
}

BENCHMARK(decode_step)
    ->Args({256, 1})
    ->Args({256, 0})
    ->Args({64, 1})
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(3000);

}  // namespace
}  // namespace sgl::scheduler

BENCHMARK_MAIN();
