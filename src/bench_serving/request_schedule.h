// When requests are sent: Poisson arrivals (or all at once) and the --max-concurrency gate.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <optional>

#include "bench_serving/synthetic_text.h"

namespace sgl::bench_serving {

// Arrival offsets of a Poisson process with `rate` requests per second: exponential gaps with
// mean 1 / rate (SGLang's --request-rate). An infinite rate sends everything at time 0.
class ArrivalSchedule {
 public:
  ArrivalSchedule(double rate, uint64_t seed);
  bool all_at_once() const { return rate_ == std::numeric_limits<double>::infinity(); }
  // The gap in seconds between the previous arrival and the next one (0 when all at once).
  double next_interval_s();

 private:
  double rate_;
  SplitMix64 rng_;
};

// A FIFO semaphore for one thread: requests past the limit wait, in arrival order, for a running
// one to finish (SGLang's asyncio.Semaphore around each request). No limit: never waits.
class ConcurrencyGate {
 public:
  explicit ConcurrencyGate(std::optional<int64_t> limit) : limit_(limit) {}
  // True if request `index` may start now; otherwise it is queued.
  bool arrive(uint64_t index);
  // A running request finished: returns the queued request that may start now, if any.
  std::optional<uint64_t> finish();
  int64_t running() const { return running_; }
  size_t waiting() const { return waiting_.size(); }

 private:
  std::optional<int64_t> limit_;
  int64_t running_ = 0;
  std::deque<uint64_t> waiting_;
};

}  // namespace sgl::bench_serving
