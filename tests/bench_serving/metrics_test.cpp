// Metrics on hand-made timings, checked against values worked out by hand (numpy's linear
// percentiles, population std), and the report built from them.
#include "bench_serving/metrics.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench_serving/report.h"

namespace sgl::bench_serving {
namespace {

RequestOutput ok(double start, double ttft, double latency, int64_t prompt, int64_t output,
                 std::vector<double> itl) {
  RequestOutput o;
  o.success = true;
  o.start_s = start;
  o.ttft_s = ttft;
  o.latency_s = latency;
  o.prompt_len = prompt;
  o.output_len = output;
  o.itl_s = std::move(itl);
  return o;
}

std::vector<RequestOutput> hand_made() {
  RequestOutput failed;
  failed.start_s = 0.2;
  failed.latency_s = 0.05;
  failed.prompt_len = 50;
  failed.error = "HTTP 503: busy";
  return {ok(0.0, 0.1, 1.1, 10, 11, std::vector<double>(10, 0.1)),
          ok(0.5, 0.2, 2.2, 20, 5, {0.5, 0.5, 0.5, 0.5}), failed, ok(1.0, 0.3, 0.3, 30, 1, {}),
          ok(3.0, 0.4, 1.4, 40, 3, {0.2, 0.8})};
}

constexpr double kTol = 1e-9;

TEST(Metrics, CountsAndThroughputs) {
  const BenchmarkMetrics m = compute_metrics(hand_made(), 5.0);
  EXPECT_EQ(m.completed, 4);
  EXPECT_EQ(m.failed, 1);
  EXPECT_EQ(m.first_errors, std::vector<std::string>{"HTTP 503: busy"});
  EXPECT_EQ(m.total_input, 100);  // the failed request's 50 are not counted
  EXPECT_EQ(m.total_output, 20);
  EXPECT_NEAR(m.request_throughput, 0.8, kTol);
  EXPECT_NEAR(m.input_throughput, 20.0, kTol);
  EXPECT_NEAR(m.output_throughput, 4.0, kTol);
  EXPECT_NEAR(m.total_throughput, 24.0, kTol);
  EXPECT_NEAR(m.concurrency, 1.0, kTol);  // (1.1 + 2.2 + 0.3 + 1.4) / 5
  EXPECT_EQ(m.max_concurrency_seen, 3);   // at t = 1.0: requests 0, 1 and 3
}

TEST(Metrics, TtftTpotItlE2eDistributions) {
  const BenchmarkMetrics m = compute_metrics(hand_made(), 5.0);
  // TTFT 0.1 0.2 0.3 0.4
  EXPECT_NEAR(m.ttft.mean_ms, 250.0, kTol);
  EXPECT_NEAR(m.ttft.median_ms, 250.0, kTol);
  EXPECT_NEAR(m.ttft.p99_ms, 397.0, kTol);  // rank 2.97: 0.3 + 0.97 * 0.1
  EXPECT_NEAR(m.ttft.std_ms, 111.80339887498948, 1e-6);
  // TPOT (latency - ttft) / (output - 1): 0.1, 0.5, 0.5; one-token requests have none.
  EXPECT_NEAR(m.tpot.mean_ms, 1100.0 / 3.0, kTol);
  EXPECT_NEAR(m.tpot.median_ms, 500.0, kTol);
  EXPECT_NEAR(m.tpot.p99_ms, 500.0, kTol);
  // ITL: ten 0.1, one 0.2, four 0.5, one 0.8 (16 gaps).
  EXPECT_NEAR(m.itl.mean_ms, 250.0, kTol);
  EXPECT_NEAR(m.itl.median_ms, 100.0, kTol);
  EXPECT_NEAR(m.itl.p95_ms, 575.0, kTol);  // rank 14.25: 0.5 + 0.25 * 0.3
  EXPECT_NEAR(m.itl.p99_ms, 755.0, kTol);  // rank 14.85: 0.5 + 0.85 * 0.3
  EXPECT_NEAR(m.itl.max_ms, 800.0, kTol);
  // E2E 0.3 1.1 1.4 2.2
  EXPECT_NEAR(m.e2e.mean_ms, 1250.0, kTol);
  EXPECT_NEAR(m.e2e.median_ms, 1250.0, kTol);
  EXPECT_NEAR(m.e2e.p99_ms, 2176.0, kTol);  // rank 2.97: 1.4 + 0.97 * 0.8
}

TEST(Metrics, EmptySamplesSummariseToZero) {
  const BenchmarkMetrics m = compute_metrics({}, 1.0);
  EXPECT_EQ(m.completed, 0);
  EXPECT_EQ(m.ttft.mean_ms, 0.0);
  EXPECT_EQ(m.itl.p99_ms, 0.0);
  EXPECT_EQ(m.max_concurrency_seen, 0);
  EXPECT_EQ(percentile(std::vector<double>{}, 50), 0.0);
  EXPECT_EQ(percentile(std::vector<double>{7.0}, 99), 7.0);
}

TEST(Metrics, BackToBackRequestsDoNotOverlap) {
  const std::vector<RequestOutput> outputs = {ok(0.0, 0.1, 1.0, 1, 2, {0.9}),
                                              ok(1.0, 0.1, 1.0, 1, 2, {0.9})};
  EXPECT_EQ(compute_metrics(outputs, 2.0).max_concurrency_seen, 1);
}

TEST(Report, TableAndJsonCarryTheMetrics) {
  ServingConfig config;
  config.backend = "sglang-oai";
  config.max_concurrency = 8;
  BenchmarkRun run;
  run.model = "m";
  run.outputs = hand_made();
  run.metrics = compute_metrics(run.outputs, 5.0);
  const std::string table = format_result_table(config, run);
  EXPECT_NE(table.find("Successful requests:                     4"), std::string::npos) << table;
  EXPECT_NE(table.find("Failed requests:                         1"), std::string::npos);
  EXPECT_NE(table.find("Median TTFT (ms):                        250.00"), std::string::npos);
  EXPECT_NE(table.find("HTTP 503: busy"), std::string::npos);
  const auto j = nlohmann::json::parse(format_result_json(config, run, true));
  EXPECT_EQ(j["completed"], 4);
  EXPECT_EQ(j["failed"], 1);
  EXPECT_EQ(j["request_rate"], "inf");
  EXPECT_EQ(j["max_concurrency"], 8);
  EXPECT_NEAR(j["p99_itl_ms"].get<double>(), 755.0, kTol);
  EXPECT_EQ(j["output_lens"], nlohmann::json::parse("[11, 5, 0, 1, 3]"));
  EXPECT_EQ(j["errors"][2], "HTTP 503: busy");
}

}  // namespace
}  // namespace sgl::bench_serving
