// Metric computation.
#include "bench_serving/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace sgl::bench_serving {
namespace {

// Most intervals [start, start + latency) that overlap at one moment.
int64_t peak_overlap(std::span<const RequestOutput> outputs) {
  std::vector<std::pair<double, int>> events;  // (time, +1 start / -1 end); ends sort first
  events.reserve(outputs.size() * 2);
  for (const RequestOutput& o : outputs) {
    events.emplace_back(o.start_s, +1);
    events.emplace_back(o.start_s + o.latency_s, -1);
  }
  std::sort(events.begin(), events.end());
  int64_t now = 0, peak = 0;
  for (const auto& [time, delta] : events) {
    now += delta;
    peak = std::max(peak, now);
  }
  return peak;
}

}  // namespace

double percentile(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double rank = q / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

Distribution summarize(std::vector<double> values_s) {
  Distribution d;
  if (values_s.empty()) return d;
  std::sort(values_s.begin(), values_s.end());
  const double n = static_cast<double>(values_s.size());
  const double mean = std::accumulate(values_s.begin(), values_s.end(), 0.0) / n;
  double sq = 0;
  for (double v : values_s) sq += (v - mean) * (v - mean);
  d.mean_ms = mean * 1000;
  d.median_ms = percentile(values_s, 50) * 1000;
  d.std_ms = std::sqrt(sq / n) * 1000;
  d.p95_ms = percentile(values_s, 95) * 1000;
  d.p99_ms = percentile(values_s, 99) * 1000;
  d.max_ms = values_s.back() * 1000;
  return d;
}

BenchmarkMetrics compute_metrics(std::span<const RequestOutput> outputs, double duration_s) {
  BenchmarkMetrics m;
  m.duration_s = duration_s;
  std::vector<double> ttfts, tpots, itls, e2es;
  for (const RequestOutput& o : outputs) {
    if (!o.success) {
      ++m.failed;
      if (m.first_errors.size() < kMaxReportedErrors) m.first_errors.push_back(o.error);
      continue;
    }
    ++m.completed;
    m.total_input += o.prompt_len;
    m.total_output += o.output_len;
    ttfts.push_back(o.ttft_s);
    e2es.push_back(o.latency_s);
    if (o.output_len > 1) {
      tpots.push_back((o.latency_s - o.ttft_s) / static_cast<double>(o.output_len - 1));
    }
    itls.insert(itls.end(), o.itl_s.begin(), o.itl_s.end());
  }
  if (duration_s > 0) {
    m.request_throughput = static_cast<double>(m.completed) / duration_s;
    m.input_throughput = static_cast<double>(m.total_input) / duration_s;
    m.output_throughput = static_cast<double>(m.total_output) / duration_s;
    m.total_throughput = static_cast<double>(m.total_input + m.total_output) / duration_s;
    m.concurrency = std::accumulate(e2es.begin(), e2es.end(), 0.0) / duration_s;
  }
  m.ttft = summarize(std::move(ttfts));
  m.tpot = summarize(std::move(tpots));
  m.itl = summarize(std::move(itls));
  m.e2e = summarize(std::move(e2es));
  m.max_concurrency_seen = peak_overlap(outputs);
  return m;
}

}  // namespace sgl::bench_serving
