// DataParallelController: routing, rid ownership, fan-out.
#include "engine/data_parallel_controller.h"

#include <algorithm>
#include <numeric>

#include "core/check.h"

namespace sgl::engine {

void number_replica_requests(EngineOptions& options, int replica, int num_replicas) {
  SGL_CHECK(num_replicas >= 1 && replica >= 0 && replica < num_replicas);
  options.first_rid = static_cast<uint64_t>(replica) + 1;
  options.rid_stride = static_cast<uint64_t>(num_replicas);
}

EngineStats sum_engine_stats(std::span<const EngineStats> replicas) {
  EngineStats out;
  scheduler::SchedulerStats& s = out.scheduler;
  double decode_cpu_us = 0;
  double new_token_ratio = 0;
  for (const EngineStats& e : replicas) {
    const scheduler::SchedulerStats& r = e.scheduler;
    s.num_running += r.num_running;
    s.num_waiting += r.num_waiting;
    s.num_retracted_total += r.num_retracted_total;
    s.num_preempted_total += r.num_preempted_total;
    s.kv_capacity += r.kv_capacity;
    s.kv_used += r.kv_used;
    s.kv_cached += r.kv_cached;
    s.kv_evictable += r.kv_evictable;
    s.waiting_tokens += r.waiting_tokens;
    s.prompt_tokens_total += r.prompt_tokens_total;
    s.cached_prompt_tokens_total += r.cached_prompt_tokens_total;
    s.computed_tokens_total += r.computed_tokens_total;
    s.generated_tokens_total += r.generated_tokens_total;
    s.finished_requests_total += r.finished_requests_total;
    s.spec_verify_steps += r.spec_verify_steps;
    s.spec_draft_tokens += r.spec_draft_tokens;
    s.spec_accepted_tokens += r.spec_accepted_tokens;
    s.spec_plain_requests += r.spec_plain_requests;
    new_token_ratio += r.new_token_ratio;
    out.generation_throughput += e.generation_throughput;
    out.decode_steps += e.decode_steps;
    decode_cpu_us += e.decode_step_cpu_us * static_cast<double>(e.decode_steps);
  }
  if (!replicas.empty()) s.new_token_ratio = new_token_ratio / static_cast<double>(replicas.size());
  if (out.decode_steps > 0)
    out.decode_step_cpu_us = decode_cpu_us / static_cast<double>(out.decode_steps);
  return out;
}

DataParallelController::DataParallelController(std::vector<Engine*> replicas,
                                               LoadBalanceMethod method,
                                               CacheAwareOptions cache_aware)
    : replicas_(std::move(replicas)),
      method_(method),
      cache_aware_(cache_aware),
      index_(static_cast<int>(replicas_.size()),
             replicas_.empty() ? 1 : replicas_.front()->options().num_kv_slots),
      routed_(replicas_.size(), 0),
      views_(replicas_.size()) {
  SGL_CHECK(!replicas_.empty()) << "a data-parallel controller needs a replica";
  const auto n = static_cast<uint64_t>(replicas_.size());
  for (size_t i = 0; i < replicas_.size(); ++i) {
    SGL_CHECK(replicas_[i] != nullptr);
    SGL_CHECK(replicas_[i]->options().first_rid == i + 1 && replicas_[i]->options().rid_stride == n)
        << "replica " << i << " does not number its requests apart (number_replica_requests)";
  }
}

// dp > 1: the choice and the submission under one lock (see mutex_). `submit_to` copies what it
// submits: a replica at capacity leaves the request to the next.
template <typename SubmitTo>
Result<std::shared_ptr<RequestStream>> DataParallelController::route(
    std::span<const int32_t> ids, std::string_view cache_namespace, SubmitTo submit_to,
    std::optional<int64_t> pinned) {
  const int n = dp_size();
  std::lock_guard lock(mutex_);
  const bool cache_aware = method_ == LoadBalanceMethod::kCacheAware;
  if (cache_aware) RoutedPrefixIndex::prefix_hashes(ids, cache_namespace, hashes_);
  for (int i = 0; i < n; ++i) {
    views_[i].load = replicas_[i]->load();
    views_[i].cached_prefix = cache_aware ? index_.match(i, hashes_) : 0;
    views_[i].cached_tokens = cache_aware ? index_.size(i) : 0;
  }
  int chosen = pinned ? static_cast<int>(*pinned)
                      : choose_replica(method_, views_, static_cast<int64_t>(ids.size()), turn_++,
                                       cache_aware_);
  auto stream = submit_to(*replicas_[chosen]);
  if (!pinned && !stream.ok() && stream.status().code() == StatusCode::kResourceExhausted) {
    std::vector<int> others(static_cast<size_t>(n));
    std::iota(others.begin(), others.end(), 0);
    std::stable_sort(others.begin(), others.end(), [&](int a, int b) {
      return views_[a].load.requests < views_[b].load.requests;
    });
    for (int i : others) {
      if (i == chosen) continue;
      auto retry = submit_to(*replicas_[i]);
      if (retry.ok() || retry.status().code() != StatusCode::kResourceExhausted) {
        stream = std::move(retry);
        chosen = i;
        break;
      }
    }
  }
  if (stream.ok()) {
    ++routed_[chosen];
    if (cache_aware) index_.insert(chosen, hashes_);
  }
  return stream;
}

Result<std::shared_ptr<RequestStream>> DataParallelController::submit(
    GenerateRequest request, std::optional<int64_t> replica) {
  if (replica && (*replica < 0 || *replica >= dp_size())) {
    return invalid_argument("routed_dp_rank " + std::to_string(*replica) +
                            " names no engine replica (--dp-size " + std::to_string(dp_size()) +
                            ")");
  }
  if (dp_size() == 1) return count(0, replicas_.front()->submit(std::move(request)));
  return route(
      request.input_ids, request.cache_namespace,
      [&request](Engine& e) { return e.submit(request); }, replica);
}

Result<std::shared_ptr<RequestStream>> DataParallelController::encode(
    std::vector<int32_t> input_ids, std::optional<int64_t> priority) {
  if (dp_size() == 1) return count(0, replicas_.front()->encode(std::move(input_ids), priority));
  return route(input_ids, "",
               [&input_ids, priority](Engine& e) { return e.encode(input_ids, priority); });
}

Result<std::shared_ptr<RequestStream>> DataParallelController::count(
    int replica, Result<std::shared_ptr<RequestStream>> stream) {
  if (stream.ok()) {
    std::lock_guard lock(mutex_);
    ++routed_[replica];
  }
  return stream;
}

void DataParallelController::abort(uint64_t rid) {
  if (rid == 0) return;  // no replica numbers a request 0
  replicas_[(rid - 1) % replicas_.size()]->abort(rid);
}

bool DataParallelController::flush_cache() {
  bool all = true;
  for (size_t i = 0; i < replicas_.size(); ++i) {
    const bool flushed = replicas_[i]->flush_cache();
    if (flushed) {
      std::lock_guard lock(mutex_);
      index_.clear(static_cast<int>(i));
    }
    all = all && flushed;
  }
  return all;
}

void DataParallelController::slow_down(double forward_sleep_s) {
  for (Engine* e : replicas_) e->slow_down(forward_sleep_s);
}

void DataParallelController::pause_generation(PauseMode mode) {
  for (Engine* e : replicas_) e->pause_generation(mode);
}

void DataParallelController::continue_generation() {
  for (Engine* e : replicas_) e->continue_generation();
}

Status DataParallelController::start_profile(const ProfileRequest& request) {
  for (size_t i = 0; i < replicas_.size(); ++i) {
    ProfileRequest replica_request = request;
    if (replicas_.size() > 1) replica_request.rank_name += "-DP-" + std::to_string(i);
    Status status = replicas_[i]->start_profile(std::move(replica_request));
    if (!status.ok()) {
      for (size_t j = 0; j < i; ++j) (void)replicas_[j]->stop_profile();
      return status;
    }
  }
  return {};
}

Status DataParallelController::stop_profile() {
  Status first;
  for (Engine* e : replicas_) {
    Status status = e->stop_profile();
    if (first.ok()) first = std::move(status);
  }
  return first;
}

bool DataParallelController::paused() const {
  return std::any_of(replicas_.begin(), replicas_.end(), [](Engine* e) { return e->paused(); });
}

EngineStats DataParallelController::get_stats() {
  const std::vector<EngineStats> stats = replica_stats();
  return replicas_.size() == 1 ? stats.front() : sum_engine_stats(stats);
}

std::vector<EngineStats> DataParallelController::replica_stats() {
  std::vector<EngineStats> stats;
  stats.reserve(replicas_.size());
  for (Engine* e : replicas_) stats.push_back(e->get_stats());
  return stats;
}

uint64_t DataParallelController::steps_processed() const {
  uint64_t steps = 0;
  for (const Engine* e : replicas_) steps += e->steps_processed();
  return steps;
}

std::vector<int64_t> DataParallelController::routed_requests() const {
  std::lock_guard lock(mutex_);
  return routed_;
}

}  // namespace sgl::engine
