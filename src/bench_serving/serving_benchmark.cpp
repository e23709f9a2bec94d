// The benchmark driver: one AsyncHttpClient, a TimedRequest per request. The driver's own steps
// (arrivals, launches, completions) run on the client's control strand, one at a time.
#include "bench_serving/serving_benchmark.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>

#include "bench_serving/async_http_client.h"
#include "bench_serving/request_schedule.h"
#include "bench_serving/timed_request.h"

namespace sgl::bench_serving {
namespace {

// SGLang caps the warmup requests' output at this many tokens.
constexpr int64_t kWarmupMaxOutputLen = 32;
// Seconds between progress lines.
constexpr double kProgressEveryS = 10.0;

std::vector<std::pair<std::string, std::string>> auth_headers(const ServingConfig& c) {
  if (c.api_key.empty()) return {};
  return {{"Authorization", "Bearer " + c.api_key}};
}

Result<std::string> discover_model(const ServingConfig& c) {
  HttpRequestSpec spec;
  spec.method = "GET";
  spec.target = c.endpoint.path_prefix + "/v1/models";
  spec.headers = auth_headers(c);
  spec.deadline = Clock::now() + std::chrono::seconds(30);
  auto reply = fetch(c.endpoint, std::move(spec));
  const std::string where = "GET " + c.endpoint.url() + "/v1/models";
  if (!reply.ok()) return reply.status().with_context(where);
  if (reply->status != 200) {
    return not_found(where + " answered HTTP " + std::to_string(reply->status) + ": " +
                     reply->body.substr(0, 300));
  }
  const auto body = nlohmann::json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
  if (body.is_object() && body.contains("data") && body["data"].is_array() &&
      !body["data"].empty() && body["data"][0].contains("id") &&
      body["data"][0]["id"].is_string()) {
    return body["data"][0]["id"].get<std::string>();
  }
  return not_found(where + " lists no model; pass --model");
}

// Sends requests as they arrive (through the gate) and collects their outputs.
class Driver {
 public:
  Driver(const ServingConfig& config, ApiKind api, std::string model, AsyncHttpClient& client,
         std::ostream& progress)
      : config_(config),
        api_(api),
        client_(client),
        progress_(progress),
        dataset_(config.dataset),
        gate_(config.max_concurrency) {
    body_options_.model = std::move(model);
    body_options_.stream = config.stream;
    body_options_.ignore_eos = config.ignore_eos;
    body_options_.extra_body = parse_extra_body(config.extra_request_body).value();  // validated
  }

  // All at once, ungated; returns the outputs.
  std::vector<RequestOutput> run_warmup(int64_t count) {
    DatasetRow row = dataset_.row(0);
    row.output_len = std::min(row.output_len, kWarmupMaxOutputLen);
    origin_ = Clock::now();
    gated_ = false;
    for (int64_t i = 0; i < count; ++i) add_slot(row);
    for (size_t i = 0; i < slots_.size(); ++i) launch(i);
    client_.run();
    return take_outputs();
  }

  // The measured run; returns the outputs and the duration in seconds.
  std::pair<std::vector<RequestOutput>, double> run_measured() {
    ArrivalSchedule schedule(config_.request_rate, config_.dataset.seed);
    origin_ = last_progress_ = Clock::now();
    gated_ = true;
    if (schedule.all_at_once()) {
      for (int64_t i = 0; i < config_.num_prompts; ++i) arrive();
    } else {
      schedule_arrival(schedule, 0.0);
    }
    client_.run();
    const double duration = std::chrono::duration<double>(Clock::now() - origin_).count();
    return {take_outputs(), duration};
  }

 private:
  struct Slot {
    DatasetRow row;
    std::unique_ptr<TimedRequest> timed;
  };

  bool more_arrivals(double offset_s) const {
    if (config_.duration_s) return offset_s < *config_.duration_s;
    return static_cast<int64_t>(slots_.size()) < config_.num_prompts;
  }

  void schedule_arrival(ArrivalSchedule& schedule, double offset_s) {
    const auto when = origin_ + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(offset_s));
    client_.call_at(when, [this, &schedule, offset_s] {
      arrive();
      const double next = offset_s + schedule.next_interval_s();
      if (more_arrivals(next)) schedule_arrival(schedule, next);
    });
  }

  size_t add_slot(DatasetRow row) {
    const size_t index = slots_.size();
    Slot& slot = slots_.emplace_back();
    slot.row = std::move(row);
    slot.timed = std::make_unique<TimedRequest>(
        api_, config_.stream, slot.row,
        [this](TimedRequest&) { client_.post([this] { on_done(); }); });
    return index;
  }

  void arrive() {
    const size_t index = add_slot(dataset_.row(slots_.size()));
    if (gate_.arrive(index)) launch(index);
  }

  void launch(size_t index) {
    Slot& slot = slots_[index];
    HttpRequestSpec spec;
    spec.target = config_.endpoint.path_prefix + api_path(api_);
    spec.body = make_request_body(api_, slot.row, body_options_);
    spec.headers = auth_headers(config_);
    slot.row.prompt = std::string();  // sent: its text is no longer needed
    const Clock::time_point now = Clock::now();
    if (config_.request_timeout_s > 0) {
      spec.deadline = now + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(config_.request_timeout_s));
    }
    slot.timed->begin(origin_, now);
    client_.start(std::move(spec), slot.timed.get());
  }

  void on_done() {
    ++finished_;
    if (!gated_) return;
    if (auto next = gate_.finish()) launch(*next);
    const Clock::time_point now = Clock::now();
    if (std::chrono::duration<double>(now - last_progress_).count() >= kProgressEveryS) {
      last_progress_ = now;
      progress_ << "  " << std::chrono::duration<double>(now - origin_).count()
                << " s: " << finished_ << " finished, " << gate_.running() << " in flight, "
                << gate_.waiting() << " waiting\n"
                << std::flush;
    }
  }

  std::vector<RequestOutput> take_outputs() {
    std::vector<RequestOutput> outputs;
    outputs.reserve(slots_.size());
    for (const Slot& slot : slots_) outputs.push_back(slot.timed->output());
    slots_.clear();
    finished_ = 0;
    return outputs;
  }

  const ServingConfig& config_;
  ApiKind api_;
  AsyncHttpClient& client_;
  std::ostream& progress_;
  SyntheticDataset dataset_;
  ConcurrencyGate gate_;
  RequestBodyOptions body_options_;
  std::deque<Slot> slots_;  // a deque: TimedRequests stay put while requests arrive
  Clock::time_point origin_{};
  Clock::time_point last_progress_{};
  int64_t finished_ = 0;
  bool gated_ = false;  // the measured run goes through gate_; warmup requests do not
};

}  // namespace

Status validate_serving_config(const ServingConfig& c) {
  SGL_RETURN_IF_ERROR(api_for_backend(c.backend).status());
  SGL_RETURN_IF_ERROR(validate_dataset_options(c.dataset));
  SGL_RETURN_IF_ERROR(parse_extra_body(c.extra_request_body).status());
  if (c.num_prompts < 1) return invalid_argument("--num-prompts must be >= 1");
  if (!(c.request_rate > 0)) return invalid_argument("--request-rate must be > 0 (or inf)");
  if (c.max_concurrency && *c.max_concurrency < 1) {
    return invalid_argument("--max-concurrency must be >= 1");
  }
  if (c.duration_s) {
    if (!(*c.duration_s > 0)) return invalid_argument("--duration must be > 0");
    if (std::isinf(c.request_rate)) {
      return invalid_argument("--duration needs a finite --request-rate");
    }
  }
  if (c.warmup_requests < 0) return invalid_argument("--warmup-requests must be >= 0");
  if (c.client_threads < 1 || c.client_threads > 256) {
    return invalid_argument("--client-threads must be in [1, 256]");
  }
  if (!(c.request_timeout_s >= 0)) return invalid_argument("--request-timeout must be >= 0");
  return Status::ok_status();
}

Result<BenchmarkRun> run_serving_benchmark(const ServingConfig& config, std::ostream& progress) {
  SGL_RETURN_IF_ERROR(validate_serving_config(config));
  SGL_ASSIGN_OR_RETURN(const ApiKind api, api_for_backend(config.backend));
  BenchmarkRun run;
  if (config.model.empty()) {
    SGL_ASSIGN_OR_RETURN(run.model, discover_model(config));
  } else {
    run.model = config.model;
  }
  SGL_ASSIGN_OR_RETURN(
      std::unique_ptr<AsyncHttpClient> client,
      AsyncHttpClient::create(config.endpoint, static_cast<int>(config.client_threads)));
  Driver driver(config, api, run.model, *client, progress);

  if (config.warmup_requests > 0) {
    progress << "Warming up with " << config.warmup_requests << " request(s)...\n" << std::flush;
    const std::vector<RequestOutput> warmup = driver.run_warmup(config.warmup_requests);
    const bool any_ok =
        std::any_of(warmup.begin(), warmup.end(), [](const RequestOutput& o) { return o.success; });
    if (!any_ok) {
      return internal_error("every warmup request failed; first error: " + warmup[0].error);
    }
  }
  progress << "Benchmarking " << config.endpoint.url() << api_path(api) << " (";
  if (config.duration_s) {
    progress << *config.duration_s << " s of arrivals";
  } else {
    progress << config.num_prompts << " requests";
  }
  progress << ")...\n" << std::flush;
  auto [outputs, duration_s] = driver.run_measured();
  run.outputs = std::move(outputs);
  run.metrics = compute_metrics(run.outputs, duration_s);
  return run;
}

}  // namespace sgl::bench_serving
