// Load-balance methods of the data-parallel controller (SGLang's --load-balance-method): which
// replica takes the next request, from a snapshot of the replicas' loads and cached prefixes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "engine/engine.h"

namespace sgl::engine {

enum class LoadBalanceMethod {
  kRoundRobin,     // replicas in turn
  kShortestQueue,  // fewest unfinished requests
  kMinimumTokens,  // fewest unfinished prompt tokens
  kCacheAware,     // longest routed prefix, unless that replica is overloaded; else least loaded
};

// SGLang's names: round_robin, shortest_queue, minimum_tokens; and cache_aware (its router's).
Result<LoadBalanceMethod> parse_load_balance_method(std::string_view name);
std::string_view load_balance_method_name(LoadBalanceMethod method);

// cache_aware's knobs (SGLang's router's, with its defaults). A replica's prefix wins when it
// covers at least cache_threshold of the prompt, and the replicas are balanced: the best match's
// replica holds at most balance_abs_threshold more requests than the least loaded one, or at
// most balance_rel_threshold times as many.
struct CacheAwareOptions {
  double cache_threshold = 0.5;
  int64_t balance_abs_threshold = 32;
  double balance_rel_threshold = 1.5;
};

// What the method sees of one replica.
struct ReplicaView {
  EngineLoad load;
  int64_t cached_prefix = 0;  // tokens of this prompt the replica is believed to cache
  // Tokens the replica is believed to cache in all: between equally loaded replicas a cold
  // prompt goes to the one caching least (SGLang's router: the smallest tree), so that the
  // prefixes, and the traffic that follows them, spread.
  int64_t cached_tokens = 0;
};

// The chosen replica's index. `turn` counts the requests routed so far: round_robin takes it
// modulo the replica count, and remaining ties between replicas rotate with it so that cold
// traffic spreads. Pure and allocation-free; `replicas` is not empty.
int choose_replica(LoadBalanceMethod method, std::span<const ReplicaView> replicas,
                   int64_t prompt_tokens, uint64_t turn, const CacheAwareOptions& cache_aware = {});

}  // namespace sgl::engine
