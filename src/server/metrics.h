// Metrics: request counters and latency histograms, rendered with the engine's gauges in
// Prometheus' text format (SGLang's `sglang:` metric names). Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"

namespace sgl::server {

// SGLang's metric flags.
struct MetricsOptions {
  // Histogram upper bounds in seconds (--bucket-time-to-first-token, --bucket-inter-token-latency,
  // --bucket-e2e-request-latency); empty: SGLang's defaults.
  std::vector<double> ttft_buckets, itl_buckets, e2e_buckets;
  // Token-count upper bounds of the prompt / uncached prompt and the generation histograms
  // (--prompt-tokens-buckets, --generation-tokens-buckets); empty: SGLang's defaults.
  std::vector<double> prompt_token_buckets, generation_token_buckets;
  // --extra-metric-labels: labels every sglang:* sample carries after model_name.
  std::vector<std::pair<std::string, std::string>> extra_labels;
};

// The options from the flags' text: `extra_labels_json` a JSON object of strings (empty: none).
// Buckets must be finite, positive and increasing; label names Prometheus' and not one the
// server sets.
Result<MetricsOptions> parse_metrics_options(std::vector<double> ttft, std::vector<double> itl,
                                             std::vector<double> e2e,
                                             std::string_view extra_labels_json);

// Token-count buckets from SGLang's rule (--prompt-tokens-buckets, --generation-tokens-buckets,
// named by `flag` in errors): "default" (empty: SGLang's defaults), "tse <middle> <base> <count>"
// (middle and middle +- base^i for i = 1..ceil(count / 2), floored at 0) or "custom <value>...";
// sorted, without repeats. No rule: empty.
Result<std::vector<double>> token_buckets_from_rule(const std::vector<std::string>& rule,
                                                    std::string_view flag);

// A cumulative histogram over fixed upper bounds (+Inf implied).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // Appends `name`_bucket / _sum / _count lines with the given label text ("k=\"v\"").
  void render(const std::string& name, const std::string& labels, std::string& out) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative); last = above every bound
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  explicit Metrics(std::string model_name, const MetricsOptions& options = {});

  // A request to `endpoint` (a route's path: bounded, whatever the client sends) by `method`, and
  // the status it was answered with (499: the client closed the connection first, as nginx
  // counts it). The router counts both for every request.
  void count_request(std::string_view endpoint, std::string_view method);
  void count_response(std::string_view endpoint, std::string_view method, int http_status);
  // A request whose preparation (chat template, tokenization) was cancelled: the client went
  // away or the server stopped.
  void count_prepare_cancelled();
  void observe_time_to_first_token(double seconds);
  void observe_inter_token_latency(double seconds);
  // A finished request: its end-to-end latency, finish reason and token counts (counted, and in
  // the prompt, uncached prompt and generation histograms).
  void observe_finished(double e2e_seconds, const std::string& finish_reason, int64_t prompt_tokens,
                        int64_t completion_tokens, int64_t cached_tokens);

  // `replicas`: each engine replica's stats (--dp-size; at least one). The sglang:* gauges are
  // their sums (one engine's meaning at dp 1); the sgl:dp_* gauges give each replica's, with a
  // dp_rank label. `preparing`: requests queued or running on the work pool (chat template,
  // tokenization).
  std::string render(std::span<const engine::EngineStats> replicas, size_t preparing = 0) const;

 private:
  const std::string labels_;  // model_name="..."
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, uint64_t> requests_;  // by endpoint, method
  std::map<std::tuple<std::string, int, std::string>, uint64_t>
      responses_;                             // by endpoint, HTTP status, method
  std::map<std::string, uint64_t> finished_;  // by finish reason
  uint64_t prompt_tokens_ = 0;
  uint64_t generation_tokens_ = 0;
  uint64_t cached_tokens_ = 0;
  uint64_t prepare_cancelled_ = 0;
  Histogram ttft_;
  Histogram itl_;
  Histogram e2e_;
  Histogram prompt_tokens_hist_;
  Histogram uncached_prompt_tokens_hist_;
  Histogram generation_tokens_hist_;
};

}  // namespace sgl::server
