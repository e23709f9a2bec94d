// Poisson arrivals and the concurrency gate.
#include "bench_serving/request_schedule.h"

#include "core/check.h"

namespace sgl::bench_serving {

// NOTE: the schedule uses its own stream of the seed (stream ~0) so that arrival times do not
// shift when the dataset's rows change.
ArrivalSchedule::ArrivalSchedule(double rate, uint64_t seed) : rate_(rate), rng_(seed, ~0ULL) {
  SGL_CHECK(rate > 0) << "request rate must be positive";
}

double ArrivalSchedule::next_interval_s() {
  if (all_at_once()) return 0.0;
  return rng_.exponential(1.0 / rate_);
}

bool ConcurrencyGate::arrive(uint64_t index) {
  if (limit_ && running_ >= *limit_) {
    waiting_.push_back(index);
    return false;
  }
  ++running_;
  return true;
}

std::optional<uint64_t> ConcurrencyGate::finish() {
  SGL_CHECK(running_ > 0) << "finish() without a running request";
  if (waiting_.empty()) {
    --running_;
    return std::nullopt;
  }
  const uint64_t next = waiting_.front();
  waiting_.pop_front();
  return next;  // the finished request's place goes to the next one: running_ is unchanged
}

}  // namespace sgl::bench_serving
