// DataParallelController: N engine replicas behind one server (SGLang's DataParallelController,
// in-process): each request goes to one replica chosen by the load-balance method; an abort goes
// to the replica that owns its rid; cache flushes and stats go to every replica. With one replica
// it is a plain pass-through to that engine.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "engine/load_balance.h"
#include "engine/routed_prefix_index.h"

namespace sgl::engine {

// Replica i of n numbers its requests i + 1, i + 1 + n, ...: the controller finds a request's
// replica from its rid alone. Sets `options`' first_rid and rid_stride.
void number_replica_requests(EngineOptions& options, int replica, int num_replicas);

// Summed over replicas (rates and averages weighted as the sums they stand for).
EngineStats sum_engine_stats(std::span<const EngineStats> replicas);

class DataParallelController {
 public:
  // `replicas`: started engines whose rids were numbered by number_replica_requests; borrowed
  // (they outlive the controller). The routed-prefix index keeps, per replica, as many prefixes
  // as the replica has KV slots.
  DataParallelController(std::vector<Engine*> replicas, LoadBalanceMethod method,
                         CacheAwareOptions cache_aware = {});
  DataParallelController(const DataParallelController&) = delete;
  DataParallelController& operator=(const DataParallelController&) = delete;

  int dp_size() const { return static_cast<int>(replicas_.size()); }
  LoadBalanceMethod method() const { return method_; }
  // Replica 0's (the replicas differ only in their rid numbering).
  const EngineOptions& options() const { return replicas_.front()->options(); }
  bool is_embedding() const { return replicas_.front()->is_embedding(); }

  // Engine::submit / encode on the chosen replica; thread-safe. A replica at capacity hands the
  // request to the next least loaded one before the request is refused. `replica` (SGLang's
  // routed_dp_rank) names the replica instead of the load balancer; InvalidArgument past
  // dp_size().
  Result<std::shared_ptr<RequestStream>> submit(GenerateRequest request,
                                                std::optional<int64_t> replica = std::nullopt);
  Result<std::shared_ptr<RequestStream>> encode(std::vector<int32_t> input_ids,
                                                std::optional<int64_t> priority = std::nullopt);
  void abort(uint64_t rid);
  // Flushes every replica; false if any has requests running (the idle ones are flushed).
  bool flush_cache();
  void slow_down(double forward_sleep_s);        // every replica's (Engine's)
  void pause_generation(PauseMode mode);         // every replica's (Engine's)
  void continue_generation();                    // every replica's
  bool paused() const;                           // any replica's
  EngineStats get_stats();                       // summed over replicas
  std::vector<EngineStats> replica_stats();      // one per replica, in order
  std::vector<int64_t> routed_requests() const;  // requests each replica accepted from here
  uint64_t steps_processed() const;              // summed over replicas (Engine's)
  // Every replica's profile (Engine's), its traces named "TP-0-DP-<i>" behind several
  // replicas; a start refused by one replica is taken back from those it started on. A stop
  // stops every replica's and returns the first refusal or failed write.
  Status start_profile(const ProfileRequest& request);
  Status stop_profile();

 private:
  // `pinned`: the replica the request names (no choice, no fallback when it is full); the
  // routed-prefix index learns the prompt (in its cache namespace) either way.
  template <typename SubmitTo>
  Result<std::shared_ptr<RequestStream>> route(std::span<const int32_t> ids,
                                               std::string_view cache_namespace, SubmitTo submit_to,
                                               std::optional<int64_t> pinned = std::nullopt);
  // dp 1: counts an accepted request.
  Result<std::shared_ptr<RequestStream>> count(int replica,
                                               Result<std::shared_ptr<RequestStream>> stream);

  const std::vector<Engine*> replicas_;
  const LoadBalanceMethod method_;
  const CacheAwareOptions cache_aware_;

  // NOTE: routing holds this across the choice and the submission (Engine::submit only queues),
  // so that the next request's choice sees this one's load.
  mutable std::mutex mutex_;
  RoutedPrefixIndex index_;         // under mutex_; cache_aware only
  uint64_t turn_ = 0;               // under mutex_
  std::vector<int64_t> routed_;     // under mutex_
  std::vector<uint64_t> hashes_;    // under mutex_; the request being routed
  std::vector<ReplicaView> views_;  // under mutex_
};

}  // namespace sgl::engine
