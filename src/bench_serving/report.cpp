// Report formatting.
#include "bench_serving/report.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace sgl::bench_serving {
namespace {

using json = nlohmann::ordered_json;

std::string line(const std::string& label, const std::string& value) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%-40s %-10s\n", label.c_str(), value.c_str());
  return buf;
}

std::string fixed(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

// "----Title----" centred in 50 columns, as SGLang prints section headers.
std::string section(const std::string& title, char fill) {
  const size_t width = 50;
  const size_t pad = title.size() >= width ? 0 : width - title.size();
  return std::string(pad / 2, fill) + title + std::string(pad - pad / 2, fill) + "\n";
}

std::string rate_string(double rate) {
  if (std::isinf(rate)) return "inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", rate);
  return buf;
}

void put_distribution(json& j, const std::string& name, const Distribution& d, bool extra) {
  j["mean_" + name + "_ms"] = d.mean_ms;
  j["median_" + name + "_ms"] = d.median_ms;
  j["std_" + name + "_ms"] = d.std_ms;
  if (extra) j["p95_" + name + "_ms"] = d.p95_ms;
  j["p99_" + name + "_ms"] = d.p99_ms;
  if (extra) j["max_" + name + "_ms"] = d.max_ms;
}

}  // namespace

std::string format_result_table(const ServingConfig& c, const BenchmarkRun& run) {
  const BenchmarkMetrics& m = run.metrics;
  std::string out = "\n";
  out += section(" Serving Benchmark Result ", '=');
  out += line("Backend:", c.backend);
  out += line("Traffic request rate:", rate_string(c.request_rate));
  out += line("Max request concurrency:",
              c.max_concurrency ? std::to_string(*c.max_concurrency) : "not set");
  out += line("Successful requests:", std::to_string(m.completed));
  out += line("Failed requests:", std::to_string(m.failed));
  out += line("Benchmark duration (s):", fixed(m.duration_s));
  out += line("Total input tokens:", std::to_string(m.total_input));
  out += line("Total generated tokens:", std::to_string(m.total_output));
  out += line("Request throughput (req/s):", fixed(m.request_throughput));
  out += line("Input token throughput (tok/s):", fixed(m.input_throughput));
  out += line("Output token throughput (tok/s):", fixed(m.output_throughput));
  out += line("Total token throughput (tok/s):", fixed(m.total_throughput));
  out += line("Concurrency:", fixed(m.concurrency));
  out += line("Max concurrency seen:", std::to_string(m.max_concurrency_seen));
  out += section("End-to-End Latency", '-');
  out += line("Mean E2E Latency (ms):", fixed(m.e2e.mean_ms));
  out += line("Median E2E Latency (ms):", fixed(m.e2e.median_ms));
  out += line("P99 E2E Latency (ms):", fixed(m.e2e.p99_ms));
  out += section("Time to First Token", '-');
  out += line("Mean TTFT (ms):", fixed(m.ttft.mean_ms));
  out += line("Median TTFT (ms):", fixed(m.ttft.median_ms));
  out += line("P99 TTFT (ms):", fixed(m.ttft.p99_ms));
  out += section("Time per Output Token (excl. 1st token)", '-');
  out += line("Mean TPOT (ms):", fixed(m.tpot.mean_ms));
  out += line("Median TPOT (ms):", fixed(m.tpot.median_ms));
  out += line("P99 TPOT (ms):", fixed(m.tpot.p99_ms));
  out += section("Inter-Token Latency", '-');
  out += line("Mean ITL (ms):", fixed(m.itl.mean_ms));
  out += line("Median ITL (ms):", fixed(m.itl.median_ms));
  out += line("P95 ITL (ms):", fixed(m.itl.p95_ms));
  out += line("P99 ITL (ms):", fixed(m.itl.p99_ms));
  out += line("Max ITL (ms):", fixed(m.itl.max_ms));
  out += std::string(50, '=') + "\n";
  if (!m.first_errors.empty()) {
    out += "First errors:\n";
    for (const std::string& e : m.first_errors) out += "  " + e + "\n";
  }
  return out;
}

std::string format_result_json(const ServingConfig& c, const BenchmarkRun& run, bool details) {
  const BenchmarkMetrics& m = run.metrics;
  json j;
  j["backend"] = c.backend;
  j["model"] = run.model;
  j["dataset_name"] = dataset_name_string(c.dataset.name);
  j["request_rate"] = std::isinf(c.request_rate) ? json("inf") : json(c.request_rate);
  j["max_concurrency"] = c.max_concurrency ? json(*c.max_concurrency) : json(nullptr);
  j["num_prompts"] = c.num_prompts;
  j["duration_limit_s"] = c.duration_s ? json(*c.duration_s) : json(nullptr);
  j["random_input_len"] = c.dataset.random_input_len;
  j["random_output_len"] = c.dataset.random_output_len;
  j["random_range_ratio"] = c.dataset.random_range_ratio;
  j["seed"] = c.dataset.seed;
  j["stream"] = c.stream;
  j["duration"] = m.duration_s;
  j["completed"] = m.completed;
  j["failed"] = m.failed;
  j["first_errors"] = m.first_errors;
  j["total_input_tokens"] = m.total_input;
  j["total_output_tokens"] = m.total_output;
  j["request_throughput"] = m.request_throughput;
  j["input_throughput"] = m.input_throughput;
  j["output_throughput"] = m.output_throughput;
  j["total_throughput"] = m.total_throughput;
  put_distribution(j, "e2e_latency", m.e2e, false);
  put_distribution(j, "ttft", m.ttft, false);
  put_distribution(j, "tpot", m.tpot, false);
  put_distribution(j, "itl", m.itl, true);
  j["concurrency"] = m.concurrency;
  j["max_concurrency_seen"] = m.max_concurrency_seen;
  if (details) {
    json input_lens = json::array(), output_lens = json::array(), ttfts = json::array(),
         itls = json::array(), texts = json::array(), errors = json::array();
    for (const RequestOutput& o : run.outputs) {
      input_lens.push_back(o.prompt_len);
      output_lens.push_back(o.success ? o.output_len : 0);
      ttfts.push_back(o.ttft_s);
      itls.push_back(o.itl_s);
      texts.push_back(o.generated_text);
      errors.push_back(o.error);
    }
    j["input_lens"] = std::move(input_lens);
    j["output_lens"] = std::move(output_lens);
    j["ttfts"] = std::move(ttfts);
    j["itls"] = std::move(itls);
    j["generated_texts"] = std::move(texts);
    j["errors"] = std::move(errors);
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace sgl::bench_serving
