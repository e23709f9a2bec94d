// Metrics: counters, histograms and the Prometheus text rendering.
#include "server/metrics.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>
#include <tuple>

#include "engine/data_parallel_controller.h"

namespace sgl::server {
namespace {

// As Python's prometheus_client writes a value (floatToGoString): Python's repr (the shortest
// round trip, "0.1" and "5.0"; exponents below 1e-4 and from 1e16), and Go's exponent from 1e6
// up ("1.5e+06"), so bucket bounds read le="0.1", as SGLang's.
std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char digits[32];
  const auto [end, ec] =
      std::to_chars(digits, digits + sizeof digits, v, std::chars_format::scientific);
  // "d.ddde±XX": the significant digits and the exponent.
  const std::string_view sci(digits, static_cast<size_t>(end - digits));
  const size_t e = sci.find('e');
  const bool negative = sci[0] == '-';
  std::string mantissa(sci.substr(negative ? 1 : 0, e - (negative ? 1 : 0)));
  mantissa.erase(std::remove(mantissa.begin(), mantissa.end(), '.'), mantissa.end());
  int exponent = 0;
  std::from_chars(sci.data() + e + 1 + (sci[e + 1] == '+' ? 1 : 0), sci.data() + sci.size(),
                  exponent);
  std::string out = negative ? "-" : "";
  auto scientific = [&] {
    out += mantissa.substr(0, 1);
    if (mantissa.size() > 1) out += "." + mantissa.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp;
  };
  if (exponent < -4 || exponent >= 16 || (v > 0 && exponent >= 6)) return scientific();
  if (exponent < 0)
    return out + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + mantissa;
  const size_t whole = static_cast<size_t>(exponent) + 1;
  if (mantissa.size() <= whole)
    return out + mantissa + std::string(whole - mantissa.size(), '0') + ".0";
  return out + mantissa.substr(0, whole) + "." + mantissa.substr(whole);
}

std::string escape_label(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void header(std::string& out, const std::string& name, const char* type, const char* help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void sample(std::string& out, const std::string& name, const std::string& labels, double v) {
  out += name + "{" + labels + "} " + number(v) + "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  ++counts_[static_cast<size_t>(it - bounds_.begin())];
  sum_ += value;
  ++count_;
}

void Histogram::render(const std::string& name, const std::string& labels, std::string& out) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    sample(out, name + "_bucket", labels + ",le=\"" + number(bounds_[i]) + "\"",
           static_cast<double>(cumulative));
  }
  sample(out, name + "_bucket", labels + ",le=\"+Inf\"", static_cast<double>(count_));
  sample(out, name + "_sum", labels, sum_);
  sample(out, name + "_count", labels, static_cast<double>(count_));
}

Result<MetricsOptions> parse_metrics_options(std::vector<double> ttft, std::vector<double> itl,
                                             std::vector<double> e2e,
                                             std::string_view extra_labels_json) {
  MetricsOptions out;
  for (auto [flag, bounds, into] :
       {std::tuple{"--bucket-time-to-first-token", &ttft, &out.ttft_buckets},
        std::tuple{"--bucket-inter-token-latency", &itl, &out.itl_buckets},
        std::tuple{"--bucket-e2e-request-latency", &e2e, &out.e2e_buckets}}) {
    for (size_t i = 0; i < bounds->size(); ++i) {
      const double b = (*bounds)[i];
      if (!std::isfinite(b) || b <= 0 || (i > 0 && b <= (*bounds)[i - 1])) {
        return invalid_argument(std::string(flag) + " takes finite, positive, increasing seconds");
      }
    }
    *into = std::move(*bounds);
  }
  if (extra_labels_json.empty()) return out;
  const auto labels = nlohmann::json::parse(extra_labels_json, nullptr, false);
  if (!labels.is_object()) {
    return invalid_argument("--extra-metric-labels takes a JSON object of label names to strings");
  }
  for (const auto& [name, value] : labels.items()) {
    const bool valid_name =
        !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
        std::all_of(
            name.begin(), name.end(),
            [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }) &&
        !name.starts_with("__");
    if (!valid_name || !value.is_string()) {
      return invalid_argument("--extra-metric-labels: '" + name +
                              "' must be a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*) with a "
                              "string value");
    }
    for (const char* taken : {"model_name", "le", "code", "status_code", "endpoint", "method",
                              "finish_reason", "dp_rank"}) {
      if (name == taken) {
        return invalid_argument("--extra-metric-labels: '" + name + "' is a label the server sets");
      }
    }
    out.extra_labels.emplace_back(name, value.get<std::string>());
  }
  return out;
}

Result<std::vector<double>> token_buckets_from_rule(const std::vector<std::string>& rule,
                                                    std::string_view flag) {
  const std::string name(flag);
  if (rule.empty() || (rule.size() == 1 && rule[0] == "default")) return std::vector<double>{};
  // Whether rule[i] is a finite number (into `v`).
  auto number_at = [&](size_t i, double& v) {
    const std::string& s = rule[i];
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && end == s.data() + s.size() && std::isfinite(v);
  };
  std::vector<double> bounds;
  if (rule[0] == "tse") {
    double middle = 0, base = 0, count = 0;
    if (rule.size() != 4 || !number_at(1, middle) || !number_at(2, base) || !number_at(3, count) ||
        count != std::floor(count)) {
      return invalid_argument(name +
                              ": the tse rule is 'tse <middle> <base> <count>' (numbers, "
                              "count whole)");
    }
    if (middle <= 0 || base <= 1 || count <= 0 || count > 64) {
      return invalid_argument(name + ": tse needs middle > 0, base > 1 and count in [1, 64]");
    }
    bounds.push_back(middle);
    double distance = 1;
    for (int i = 0; i < static_cast<int>(std::ceil(count / 2)); ++i) {
      distance *= base;
      bounds.push_back(middle + distance);
      bounds.push_back(std::max(0.0, middle - distance));
    }
  } else if (rule[0] == "custom") {
    if (rule.size() < 2) return invalid_argument(name + ": the custom rule needs bucket values");
    for (size_t i = 1; i < rule.size(); ++i) {
      double v = 0;
      if (!number_at(i, v) || v < 0) {
        return invalid_argument(name +
                                ": custom bucket values must be non-negative numbers, "
                                "not '" +
                                rule[i] + "'");
      }
      if (std::find(bounds.begin(), bounds.end(), v) != bounds.end()) {
        return invalid_argument(name + ": custom bucket values repeat " + rule[i]);
      }
      bounds.push_back(v);
    }
  } else if (rule[0] == "default") {
    return invalid_argument(name + ": the default rule takes no values");
  } else {
    return invalid_argument(name +
                            ": the rule must be 'default', 'tse <middle> <base> <count>' "
                            "or 'custom <value>...', not '" +
                            rule[0] + "'");
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  return bounds;
}

namespace {

std::string label_text(const std::string& model_name, const MetricsOptions& options) {
  std::string out = "model_name=\"" + escape_label(model_name) + "\"";
  for (const auto& [name, value] : options.extra_labels) {
    out += "," + name + "=\"" + escape_label(value) + "\"";
  }
  return out;
}

// SGLang's default bounds (seconds).
std::vector<double> or_default(const std::vector<double>& given, std::vector<double> fallback) {
  return given.empty() ? std::move(fallback) : given;
}

// SGLang's token-count bounds (both histograms use the prompt's).
std::vector<double> default_token_buckets() {
  return {100,    300,    500,    700,    1000,   1500,   2000,    3000,   4000,
          5000,   6000,   7000,   8000,   9000,   10000,  12500,   15000,  17500,
          20000,  22500,  25000,  27500,  30000,  35000,  40000,   60000,  80000,
          100000, 200000, 300000, 400000, 600000, 800000, 1000000, 1100000};
}

// A method the server serves, or "other": the label stays bounded whatever a client sends.
std::string method_label(std::string_view method) {
  static constexpr std::string_view kMethods[] = {"GET",  "POST",    "PUT",  "DELETE",
                                                  "HEAD", "OPTIONS", "PATCH"};
  const bool known =
      std::find(std::begin(kMethods), std::end(kMethods), method) != std::end(kMethods);
  return known ? std::string(method) : "other";
}

}  // namespace

Metrics::Metrics(std::string model_name, const MetricsOptions& options)
    : labels_(label_text(model_name, options)),
      ttft_(or_default(options.ttft_buckets, {0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40,
                                              60, 80, 100, 200, 400})),
      itl_(or_default(options.itl_buckets, {0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025,
                                            0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400,
                                            0.600, 0.800, 1,     2,     4,     6,     8})),
      e2e_(or_default(options.e2e_buckets,
                      {0.1, 0.2, 0.4, 0.6, 0.8, 1,   2,   4,   6,    8,    10,
                       20,  40,  60,  80,  100, 200, 400, 600, 1200, 1800, 2400})),
      prompt_tokens_hist_(or_default(options.prompt_token_buckets, default_token_buckets())),
      uncached_prompt_tokens_hist_(
          or_default(options.prompt_token_buckets, default_token_buckets())),
      generation_tokens_hist_(
          or_default(options.generation_token_buckets, default_token_buckets())) {}

void Metrics::count_request(std::string_view endpoint, std::string_view method) {
  std::string label = method_label(method);
  std::lock_guard lock(mutex_);
  ++requests_[{std::string(endpoint), std::move(label)}];
}

void Metrics::count_response(std::string_view endpoint, std::string_view method, int http_status) {
  std::string label = method_label(method);
  std::lock_guard lock(mutex_);
  ++responses_[{std::string(endpoint), http_status, std::move(label)}];
}

void Metrics::count_prepare_cancelled() {
  std::lock_guard lock(mutex_);
  ++prepare_cancelled_;
}

void Metrics::observe_time_to_first_token(double seconds) {
  std::lock_guard lock(mutex_);
  ttft_.observe(seconds);
}

void Metrics::observe_inter_token_latency(double seconds) {
  std::lock_guard lock(mutex_);
  itl_.observe(seconds);
}

void Metrics::observe_finished(double e2e_seconds, const std::string& finish_reason,
                               int64_t prompt_tokens, int64_t completion_tokens,
                               int64_t cached_tokens) {
  std::lock_guard lock(mutex_);
  e2e_.observe(e2e_seconds);
  prompt_tokens_hist_.observe(static_cast<double>(prompt_tokens));
  uncached_prompt_tokens_hist_.observe(static_cast<double>(prompt_tokens - cached_tokens));
  generation_tokens_hist_.observe(static_cast<double>(completion_tokens));
  // A reply that ended in tool calls stopped on its own (SGLang counts no such reason).
  ++finished_[finish_reason == "tool_calls" ? "stop" : finish_reason];
  prompt_tokens_ += static_cast<uint64_t>(std::max<int64_t>(prompt_tokens, 0));
  generation_tokens_ += static_cast<uint64_t>(std::max<int64_t>(completion_tokens, 0));
  cached_tokens_ += static_cast<uint64_t>(std::max<int64_t>(cached_tokens, 0));
}

std::string Metrics::render(std::span<const engine::EngineStats> replicas, size_t preparing) const {
  const engine::EngineStats stats =
      replicas.size() == 1 ? replicas.front() : engine::sum_engine_stats(replicas);
  const scheduler::SchedulerStats& s = stats.scheduler;
  std::string out;
  std::lock_guard lock(mutex_);
  // SGLang's pair: requests by endpoint and method, responses by endpoint, status code and
  // method (499: the client closed the connection first, as nginx counts it).
  header(out, "sglang:http_requests_total", "counter", "HTTP requests by endpoint and method.");
  for (const auto& [key, n] : requests_) {
    sample(out, "sglang:http_requests_total",
           labels_ + ",endpoint=\"" + escape_label(key.first) + "\",method=\"" + key.second + "\"",
           static_cast<double>(n));
  }
  header(out, "sglang:http_responses_total", "counter",
         "HTTP responses by endpoint, status code and method.");
  for (const auto& [key, n] : responses_) {
    const auto& [endpoint, code, method] = key;
    sample(out, "sglang:http_responses_total",
           labels_ + ",endpoint=\"" + escape_label(endpoint) + "\",status_code=\"" +
               std::to_string(code) + "\",method=\"" + method + "\"",
           static_cast<double>(n));
  }
  header(out, "sglang:num_requests_total", "counter",
         "Finished generation requests by finish reason.");
  for (const char* reason : {"stop", "length", "abort"}) {
    const auto it = finished_.find(reason);
    sample(out, "sglang:num_requests_total",
           labels_ + ",finish_reason=\"" + std::string(reason) + "\"",
           it == finished_.end() ? 0.0 : static_cast<double>(it->second));
  }
  header(out, "sglang:prompt_tokens_total", "counter", "Prompt tokens of finished requests.");
  sample(out, "sglang:prompt_tokens_total", labels_, static_cast<double>(prompt_tokens_));
  header(out, "sglang:generation_tokens_total", "counter",
         "Generated tokens of finished requests.");
  sample(out, "sglang:generation_tokens_total", labels_, static_cast<double>(generation_tokens_));
  header(out, "sglang:cached_tokens_total", "counter",
         "Prompt tokens served from the prefix cache.");
  sample(out, "sglang:cached_tokens_total", labels_, static_cast<double>(cached_tokens_));

  header(out, "sgl:prepare_cancelled_total", "counter",
         "Requests whose chat template rendering or tokenization was cancelled.");
  sample(out, "sgl:prepare_cancelled_total", labels_, static_cast<double>(prepare_cancelled_));

  header(out, "sgl:num_preparing_reqs", "gauge",
         "Requests whose chat template or tokenization is queued or running.");
  sample(out, "sgl:num_preparing_reqs", labels_, static_cast<double>(preparing));

  header(out, "sglang:time_to_first_token_seconds", "histogram", "Time to first token.");
  ttft_.render("sglang:time_to_first_token_seconds", labels_, out);
  header(out, "sglang:inter_token_latency_seconds", "histogram", "Time between tokens.");
  itl_.render("sglang:inter_token_latency_seconds", labels_, out);
  header(out, "sglang:e2e_request_latency_seconds", "histogram", "End-to-end request latency.");
  e2e_.render("sglang:e2e_request_latency_seconds", labels_, out);
  header(out, "sglang:prompt_tokens_histogram", "histogram", "Histogram of prompt token length.");
  prompt_tokens_hist_.render("sglang:prompt_tokens_histogram", labels_, out);
  header(out, "sglang:uncached_prompt_tokens_histogram", "histogram",
         "Histogram of uncached (compute) prompt token length.");
  uncached_prompt_tokens_hist_.render("sglang:uncached_prompt_tokens_histogram", labels_, out);
  header(out, "sglang:generation_tokens_histogram", "histogram",
         "Histogram of generation token length.");
  generation_tokens_hist_.render("sglang:generation_tokens_histogram", labels_, out);

  header(out, "sglang:num_running_reqs", "gauge", "Requests running.");
  sample(out, "sglang:num_running_reqs", labels_, static_cast<double>(s.num_running));
  header(out, "sglang:num_queue_reqs", "gauge", "Requests waiting.");
  sample(out, "sglang:num_queue_reqs", labels_, static_cast<double>(s.num_waiting));
  header(out, "sglang:num_used_tokens", "gauge",
         "KV slots in use (requests and the cache they hold; the evictable cache is free).");
  sample(out, "sglang:num_used_tokens", labels_, static_cast<double>(s.kv_in_use()));
  header(out, "sglang:max_total_num_tokens", "gauge", "KV slots in all.");
  sample(out, "sglang:max_total_num_tokens", labels_, static_cast<double>(s.kv_capacity));
  header(out, "sglang:token_usage", "gauge", "Fraction of KV slots in use.");
  sample(out, "sglang:token_usage", labels_, s.kv_usage());
  header(out, "sglang:cache_hit_rate", "gauge", "Prompt tokens served from the prefix cache.");
  sample(out, "sglang:cache_hit_rate", labels_, s.cache_hit_rate());
  header(out, "sglang:gen_throughput", "gauge", "Generated tokens per second, recently.");
  sample(out, "sglang:gen_throughput", labels_, stats.generation_throughput);
  header(out, "sglang:spec_accept_length", "gauge",
         "Tokens a speculative verify step yields on average (1 + accepted drafts); 0 before "
         "the first.");
  sample(out, "sglang:spec_accept_length", labels_, s.spec_accept_length());

  // Per replica: what the load balancer weighs.
  const auto per_replica = [&](const char* name, const char* help, auto value) {
    header(out, name, "gauge", help);
    for (size_t rank = 0; rank < replicas.size(); ++rank) {
      sample(out, name, labels_ + ",dp_rank=\"" + std::to_string(rank) + "\"",
             static_cast<double>(value(replicas[rank])));
    }
  };
  using engine::EngineStats;
  per_replica("sgl:dp_num_running_reqs", "Requests running, per data-parallel replica.",
              [](const EngineStats& e) { return e.scheduler.num_running; });
  per_replica("sgl:dp_num_queue_reqs", "Requests waiting, per data-parallel replica.",
              [](const EngineStats& e) { return e.scheduler.num_waiting; });
  per_replica("sgl:dp_token_usage", "Fraction of KV slots in use, per data-parallel replica.",
              [](const EngineStats& e) { return e.scheduler.kv_usage(); });
  per_replica("sgl:dp_cache_hit_rate",
              "Prompt tokens served from the prefix cache, per data-parallel replica.",
              [](const EngineStats& e) { return e.scheduler.cache_hit_rate(); });
  return out;
}

}  // namespace sgl::server
