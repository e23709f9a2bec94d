// Benchmark metrics from the per-request outputs, with SGLang bench_serving's definitions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bench_serving/request_output.h"

namespace sgl::bench_serving {

// Summary of a sample in milliseconds. Percentiles interpolate linearly between order
// statistics (numpy's default); std is the population standard deviation. An empty sample
// summarises to zeros (SGLang's `np.mean(x or 0)`).
struct Distribution {
  double mean_ms = 0;
  double median_ms = 0;
  double std_ms = 0;
  double p95_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
};

// `values_s` in seconds.
Distribution summarize(std::vector<double> values_s);
// The q-th percentile (0..100) of sorted values, linear interpolation.
double percentile(std::span<const double> sorted, double q);

struct BenchmarkMetrics {
  int64_t completed = 0;
  int64_t failed = 0;
  std::vector<std::string> first_errors;  // up to kMaxReportedErrors, in request order
  double duration_s = 0;
  int64_t total_input = 0;        // over completed requests
  int64_t total_output = 0;       // over completed requests
  double request_throughput = 0;  // completed / duration
  double input_throughput = 0;
  double output_throughput = 0;
  double total_throughput = 0;
  Distribution ttft;
  Distribution tpot;  // (latency - ttft) / (output_len - 1), requests with output_len > 1
  Distribution itl;   // every inter-chunk gap of every completed request
  Distribution e2e;
  double concurrency = 0;            // sum of e2e latencies / duration (SGLang's "Concurrency")
  int64_t max_concurrency_seen = 0;  // most requests in flight at once (all, failed included)
};

constexpr size_t kMaxReportedErrors = 5;

BenchmarkMetrics compute_metrics(std::span<const RequestOutput> outputs, double duration_s);

}  // namespace sgl::bench_serving
