// The load-balance methods.
#include "engine/load_balance.h"

#include <algorithm>

#include "core/check.h"

namespace sgl::engine {
namespace {

// The replica with the least `key`, ties broken by rotating from `turn`.
template <typename Key>
int least(std::span<const ReplicaView> replicas, uint64_t turn, Key key) {
  const auto n = static_cast<int>(replicas.size());
  const int start = static_cast<int>(turn % static_cast<uint64_t>(n));
  int best = start;
  for (int k = 1; k < n; ++k) {
    const int i = (start + k) % n;
    if (key(replicas[i]) < key(replicas[best])) best = i;
  }
  return best;
}

int64_t requests(const ReplicaView& r) { return r.load.requests; }
int64_t tokens(const ReplicaView& r) { return r.load.tokens; }

int cache_aware(std::span<const ReplicaView> replicas, int64_t prompt_tokens, uint64_t turn,
                const CacheAwareOptions& o) {
  const int least_loaded = least(replicas, turn, [](const ReplicaView& r) {
    return std::pair(r.load.requests, r.cached_tokens);
  });
  // The longest match; among equal matches the less loaded replica.
  const int best = least(replicas, turn, [](const ReplicaView& r) {
    return std::pair(-r.cached_prefix, r.load.requests);
  });
  const ReplicaView& b = replicas[best];
  const bool warm = prompt_tokens > 0 && b.cached_prefix > 0 &&
                    static_cast<double>(b.cached_prefix) >=
                        o.cache_threshold * static_cast<double>(prompt_tokens);
  const int64_t min_load = replicas[least_loaded].load.requests;
  const bool overloaded = b.load.requests - min_load > o.balance_abs_threshold &&
                          static_cast<double>(b.load.requests) >
                              o.balance_rel_threshold * static_cast<double>(min_load);
  return warm && !overloaded ? best : least_loaded;
}

}  // namespace

Result<LoadBalanceMethod> parse_load_balance_method(std::string_view name) {
  for (LoadBalanceMethod m : {LoadBalanceMethod::kRoundRobin, LoadBalanceMethod::kShortestQueue,
                              LoadBalanceMethod::kMinimumTokens, LoadBalanceMethod::kCacheAware}) {
    if (load_balance_method_name(m) == name) return m;
  }
  // SGLang 0.5's names for the same rules (auto is round robin outside PD disaggregation).
  if (name == "auto") return LoadBalanceMethod::kRoundRobin;
  if (name == "total_requests") return LoadBalanceMethod::kShortestQueue;
  if (name == "total_tokens") return LoadBalanceMethod::kMinimumTokens;
  if (name == "follow_bootstrap_room") {
    return invalid_argument(
        "--load-balance-method follow_bootstrap_room is for prefill-decode disaggregation, which "
        "sgl.cpp does not implement");
  }
  return invalid_argument(
      "--load-balance-method expects round_robin, shortest_queue (total_requests), "
      "minimum_tokens (total_tokens), cache_aware or auto, got '" +
      std::string(name) + "'");
}

std::string_view load_balance_method_name(LoadBalanceMethod method) {
  switch (method) {
    case LoadBalanceMethod::kRoundRobin:
      return "round_robin";
    case LoadBalanceMethod::kShortestQueue:
      return "shortest_queue";
    case LoadBalanceMethod::kMinimumTokens:
      return "minimum_tokens";
    case LoadBalanceMethod::kCacheAware:
      return "cache_aware";
  }
  return "unknown";
}

int choose_replica(LoadBalanceMethod method, std::span<const ReplicaView> replicas,
                   int64_t prompt_tokens, uint64_t turn, const CacheAwareOptions& cache_aware_o) {
  SGL_CHECK(!replicas.empty());
  switch (method) {
    case LoadBalanceMethod::kRoundRobin:
      return static_cast<int>(turn % replicas.size());
    case LoadBalanceMethod::kShortestQueue:
      return least(replicas, turn, requests);
    case LoadBalanceMethod::kMinimumTokens:
      return least(replicas, turn, tokens);
    case LoadBalanceMethod::kCacheAware:
      return cache_aware(replicas, prompt_tokens, turn, cache_aware_o);
  }
  return 0;
}

}  // namespace sgl::engine
