// The serving benchmark: warm up, send the dataset's requests on the arrival schedule through
// the concurrency gate, time every response, and compute the metrics.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "bench_serving/api_protocol.h"
#include "bench_serving/dataset.h"
#include "bench_serving/http_endpoint.h"
#include "bench_serving/metrics.h"
#include "bench_serving/request_output.h"
#include "core/status.h"

namespace sgl::bench_serving {

struct ServingConfig {
  std::string backend = "sglang";
  HttpEndpoint endpoint;
  std::string model;    // empty: the first id of GET /v1/models
  std::string api_key;  // sent as "Authorization: Bearer KEY" when not empty
  DatasetOptions dataset;
  int64_t num_prompts = 1000;
  double request_rate = std::numeric_limits<double>::infinity();
  std::optional<int64_t> max_concurrency;
  // Keep sending Poisson arrivals until this many seconds have passed (then let the requests in
  // flight finish); replaces num_prompts as the stop condition.
  std::optional<double> duration_s;
  int64_t warmup_requests = 1;  // copies of the first row (<= 32 output tokens), not measured
  bool stream = true;
  bool ignore_eos = true;
  double request_timeout_s = 0;    // per request, connect to last byte; 0 = none
  std::string extra_request_body;  // JSON object merged into every request body
  // Threads reading the responses (--client-threads): enough that every stream's bytes are
  // taken as they arrive, so the latencies are the server's, not the client's backlog.
  int64_t client_threads = 4;
};

Status validate_serving_config(const ServingConfig& config);

struct BenchmarkRun {
  std::string model;
  std::vector<RequestOutput> outputs;  // in arrival order
  BenchmarkMetrics metrics;
};

// Runs the whole benchmark on the calling thread; progress lines go to `progress`. Errors are
// setup failures (unreachable server, no model, every warmup request failed); failed requests
// of the measured run are counted in the metrics instead.
Result<BenchmarkRun> run_serving_benchmark(const ServingConfig& config, std::ostream& progress);

}  // namespace sgl::bench_serving
