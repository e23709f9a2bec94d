// The load-balance methods on a fake view of the replicas' loads, and the routed-prefix index
// the cache_aware method reads.
#include "engine/load_balance.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "engine/routed_prefix_index.h"

namespace sgl::engine {
namespace {

ReplicaView view(int64_t requests, int64_t tokens = 0, int64_t cached = 0,
                 int64_t cached_tokens = 0) {
  return ReplicaView{EngineLoad{requests, tokens}, cached, cached_tokens};
}

TEST(LoadBalanceMethod, ParsesSGLangNamesAndRefusesOthers) {
  for (const char* name : {"round_robin", "shortest_queue", "minimum_tokens", "cache_aware"}) {
    auto m = parse_load_balance_method(name);
    ASSERT_TRUE(m.ok()) << name;
    EXPECT_EQ(load_balance_method_name(*m), name);
  }
  // SGLang 0.5's names.
  for (const auto& [name, same] :
       {std::pair{"auto", "round_robin"}, std::pair{"total_requests", "shortest_queue"},
        std::pair{"total_tokens", "minimum_tokens"}}) {
    auto m = parse_load_balance_method(name);
    ASSERT_TRUE(m.ok()) << name;
    EXPECT_EQ(load_balance_method_name(*m), same);
  }
  auto disaggregation = parse_load_balance_method("follow_bootstrap_room");
  ASSERT_FALSE(disaggregation.ok());
  EXPECT_NE(disaggregation.status().message().find("disaggregation"), std::string::npos);
  auto bad = parse_load_balance_method("random");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'random'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("cache_aware"), std::string::npos);
}

TEST(LoadBalance, RoundRobinTakesReplicasInTurnWhateverTheirLoad) {
  const std::vector<ReplicaView> r = {view(100), view(0), view(7)};
  std::vector<int> picks;
  for (uint64_t turn = 0; turn < 6; ++turn) {
    picks.push_back(choose_replica(LoadBalanceMethod::kRoundRobin, r, 10, turn));
  }
  EXPECT_EQ(picks, (std::vector<int>{0, 1, 2, 0, 1, 2}));
}

TEST(LoadBalance, ShortestQueuePicksFewestRequestsAndRotatesTies) {
  const std::vector<ReplicaView> r = {view(3, 10), view(1, 900), view(2, 5)};
  EXPECT_EQ(choose_replica(LoadBalanceMethod::kShortestQueue, r, 10, 0), 1);
  EXPECT_EQ(choose_replica(LoadBalanceMethod::kShortestQueue, r, 10, 2), 1);
  const std::vector<ReplicaView> tied = {view(1), view(1), view(1), view(1)};
  for (uint64_t turn = 0; turn < 4; ++turn) {
    EXPECT_EQ(choose_replica(LoadBalanceMethod::kShortestQueue, tied, 10, turn),
              static_cast<int>(turn));
  }
}

TEST(LoadBalance, MinimumTokensPicksFewestTokensNotFewestRequests) {
  const std::vector<ReplicaView> r = {view(3, 10), view(1, 900), view(2, 50)};
  EXPECT_EQ(choose_replica(LoadBalanceMethod::kMinimumTokens, r, 10, 1), 0);
}

TEST(LoadBalance, CacheAwarePicksTheLongestCachedPrefix) {
  // Replica 2 holds 60 of the 100 tokens; it is busier, but within the balance thresholds.
  const std::vector<ReplicaView> r = {view(0, 0, 0), view(1, 0, 40), view(5, 0, 60)};
  for (uint64_t turn = 0; turn < 3; ++turn) {
    EXPECT_EQ(choose_replica(LoadBalanceMethod::kCacheAware, r, 100, turn), 2);
  }
}

TEST(LoadBalance, CacheAwareSendsColdPromptsToTheLeastLoaded) {
  // Below the threshold (half the prompt) a match does not count: least loaded wins.
  const std::vector<ReplicaView> r = {view(4, 0, 40), view(1, 0, 0), view(2, 0, 10)};
  EXPECT_EQ(choose_replica(LoadBalanceMethod::kCacheAware, r, 100, 0), 1);
  // Equally loaded cold replicas take turns: sequential cold traffic spreads.
  const std::vector<ReplicaView> idle = {view(0), view(0), view(0)};
  std::vector<int> picks;
  for (uint64_t turn = 0; turn < 6; ++turn) {
    picks.push_back(choose_replica(LoadBalanceMethod::kCacheAware, idle, 100, turn));
  }
  EXPECT_EQ(picks, (std::vector<int>{0, 1, 2, 0, 1, 2}));
  // Between equally loaded replicas, the one caching the fewest prefixes.
  const std::vector<ReplicaView> busy = {view(2, 0, 0, 500), view(2, 0, 0, 90), view(3, 0, 0, 0)};
  for (uint64_t turn = 0; turn < 3; ++turn) {
    EXPECT_EQ(choose_replica(LoadBalanceMethod::kCacheAware, busy, 100, turn), 1);
  }
}

TEST(LoadBalance, CacheAwareGivesUpTheHitWhenItsReplicaIsOverloaded) {
  CacheAwareOptions o;
  o.balance_abs_threshold = 4;
  o.balance_rel_threshold = 1.5;
  // 10 vs 2: more than 4 apart and more than 1.5x: the hot replica is skipped.
  EXPECT_EQ(choose_replica(LoadBalanceMethod::kCacheAware, std::vector{view(10, 0, 90), view(2)},
                           100, 0, o),
            1);
  // 6 vs 2: within the absolute threshold: the hit wins.
  EXPECT_EQ(choose_replica(LoadBalanceMethod::kCacheAware, std::vector{view(6, 0, 90), view(2)},
                           100, 0, o),
            0);
  // Among equal matches the less loaded replica.
  EXPECT_EQ(choose_replica(LoadBalanceMethod::kCacheAware,
                           std::vector{view(3, 0, 90), view(1, 0, 90)}, 100, 0, o),
            1);
}

TEST(LoadBalance, CacheAwareBalancesHitRateAgainstLoadUnderABurst) {
  // 64 requests of one shared prefix arrive while none finishes: the hot replica takes them
  // until it is balance_abs_threshold ahead, then the others share the rest.
  CacheAwareOptions o;
  o.balance_abs_threshold = 8;
  std::vector<ReplicaView> r = {view(0), view(0), view(0), view(0)};
  for (uint64_t turn = 0; turn < 64; ++turn) {
    const int i = choose_replica(LoadBalanceMethod::kCacheAware, r, 100, turn, o);
    ++r[i].load.requests;
    r[i].cached_prefix = 100;
  }
  int64_t max = 0, min = 64;
  for (const ReplicaView& v : r) {
    max = std::max(max, v.load.requests);
    min = std::min(min, v.load.requests);
  }
  EXPECT_LE(max - min, o.balance_abs_threshold + 1);
  EXPECT_GT(min, 0);
}

TEST(RoutedPrefixIndex, MatchesTheLongestRoutedPrefixPerReplica) {
  RoutedPrefixIndex index(2, 1000);
  std::vector<uint64_t> a, b, c;
  RoutedPrefixIndex::prefix_hashes(std::vector<int32_t>{5, 6, 7, 8}, "", a);
  RoutedPrefixIndex::prefix_hashes(std::vector<int32_t>{5, 6, 9}, "", b);
  RoutedPrefixIndex::prefix_hashes(std::vector<int32_t>{6, 7, 8}, "", c);
  index.insert(0, a);
  EXPECT_EQ(index.match(0, a), 4);
  EXPECT_EQ(index.match(0, b), 2);
  EXPECT_EQ(index.match(0, c), 0);  // a suffix is not a prefix
  EXPECT_EQ(index.match(1, a), 0);
  // The same ids in a cache namespace are another prompt (their KV is cached apart).
  std::vector<uint64_t> salted, salted_again, other_salt;
  RoutedPrefixIndex::prefix_hashes(std::vector<int32_t>{5, 6, 7, 8}, "tenant", salted);
  RoutedPrefixIndex::prefix_hashes(std::vector<int32_t>{5, 6, 7}, "tenant", salted_again);
  RoutedPrefixIndex::prefix_hashes(std::vector<int32_t>{5, 6, 7, 8}, "other", other_salt);
  EXPECT_EQ(index.match(0, salted), 0);
  index.insert(1, salted);
  EXPECT_EQ(index.match(1, salted_again), 3);
  EXPECT_EQ(index.match(1, other_salt), 0);
  EXPECT_EQ(index.match(1, a), 0);
  index.clear(0);
  EXPECT_EQ(index.match(0, a), 0);
}

TEST(RoutedPrefixIndex, EvictsTheLeastRecentlyRoutedPromptsFirst) {
  RoutedPrefixIndex index(1, 40);
  std::vector<std::vector<uint64_t>> prompts(6);
  for (int p = 0; p < 6; ++p) {
    std::vector<int32_t> ids(10);
    for (int j = 0; j < 10; ++j) ids[j] = 100 * p + j;
    RoutedPrefixIndex::prefix_hashes(ids, "", prompts[p]);
    index.insert(0, prompts[p]);
    if (p >= 1) index.insert(0, prompts[0]);  // prompt 0 stays recent
    EXPECT_LE(index.size(0), 40);
  }
  EXPECT_EQ(index.match(0, prompts[0]), 10);
  EXPECT_EQ(index.match(0, prompts[5]), 10);
  EXPECT_EQ(index.match(0, prompts[1]), 0);
  // A prompt longer than the capacity keeps its first `capacity` tokens.
  std::vector<uint64_t> longer;
  RoutedPrefixIndex::prefix_hashes(std::vector<int32_t>(100, 3), "", longer);
  index.insert(0, longer);
  EXPECT_EQ(index.match(0, longer), 40);
}

}  // namespace
}  // namespace sgl::engine
