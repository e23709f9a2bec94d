// The benchmark's report: SGLang's "Serving Benchmark Result" table and a JSON line.
#pragma once

#include <string>

#include "bench_serving/serving_benchmark.h"

namespace sgl::bench_serving {

// The table printed at the end of a run (SGLang's layout, plus failures and peak concurrency).
std::string format_result_table(const ServingConfig& config, const BenchmarkRun& run);

// One JSON object on one line, with SGLang's field names (plus "failed", "first_errors",
// "max_concurrency_seen", "model"); `details` adds per-request input_lens, output_lens, ttfts,
// itls, generated_texts and errors. An infinite request rate is written as the string "inf".
std::string format_result_json(const ServingConfig& config, const BenchmarkRun& run, bool details);

}  // namespace sgl::bench_serving
