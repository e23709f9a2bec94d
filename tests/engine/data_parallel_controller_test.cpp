// DataParallelController over 2 and 4 engine replicas: each load-balance method distributes a
// seeded workload as specified (replicas whose loops are not started, so that nothing finishes
// and every load is exact), rids name their replica, and over started replicas (the fake model)
// concurrent requests get their own outputs, aborts reach the right replica and stats add up.
#include "engine/data_parallel_controller.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "scheduler/fake_batch_runner.h"
#include "scheduler/greedy_ids_request.h"
#include "stream_outcome.h"

namespace sgl::engine {
namespace {

constexpr int32_t kVocab = 97;

EngineOptions replica_options(int replica, int n, int64_t max_queued = 0) {
  EngineOptions o;
  o.scheduler.max_queued_requests = max_queued;
  o.num_kv_slots = 400;
  o.context_length = 256;
  o.vocab_size = kVocab;
  o.max_num_tokens = 1 << 20;
  o.scheduler.max_running_requests = 16;
  o.scheduler.chunked_prefill_size = 32;
  number_replica_requests(o, replica, n);
  return o;
}

// N replicas; `start`: with the fake model running, else their loops never start (requests stay
// queued, so the controller's load view is exact).
struct Replicas {
  Replicas(int n, bool start, int64_t max_queued = 0) {
    for (int i = 0; i < n; ++i) {
      engines.push_back(std::make_unique<Engine>(replica_options(i, n, max_queued)));
    }
    if (start) start_all();
  }
  void start_all() {
    for (auto& e : engines) {
      e->set_check_integrity(true);
      e->start(std::make_unique<test::FakeBatchRunner>(e->req_to_token_pool(), 400, kVocab));
    }
  }
  std::vector<Engine*> pointers() {
    std::vector<Engine*> out;
    for (auto& e : engines) out.push_back(e.get());
    return out;
  }
  std::vector<std::unique_ptr<Engine>> engines;
};

std::vector<int32_t> random_prompt(std::mt19937& rng, int len) {
  std::vector<int32_t> p(static_cast<size_t>(len));
  for (int32_t& id : p) id = static_cast<int32_t>(1 + rng() % (kVocab - 1));
  return p;
}

int replica_of(uint64_t rid, int n) { return static_cast<int>((rid - 1) % n); }

class DataParallel : public ::testing::TestWithParam<int> {};

TEST_P(DataParallel, RoundRobinSplitsEvenlyInTurn) {
  const int n = GetParam();
  Replicas replicas(n, /*start=*/false);
  DataParallelController dp(replicas.pointers(), LoadBalanceMethod::kRoundRobin);
  std::mt19937 rng(1);
  for (int i = 0; i < 8 * n; ++i) {
    auto s = dp.submit(test::greedy_ids_request(random_prompt(rng, 5 + i % 7), 4));
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    EXPECT_EQ(replica_of((*s)->rid(), n), i % n);
  }
  EXPECT_EQ(dp.routed_requests(), std::vector<int64_t>(static_cast<size_t>(n), 8));
}

TEST_P(DataParallel, ShortestQueueKeepsRequestCountsLevel) {
  const int n = GetParam();
  Replicas replicas(n, false);
  DataParallelController dp(replicas.pointers(), LoadBalanceMethod::kShortestQueue);
  std::mt19937 rng(2);
  for (int i = 0; i < 6 * n + 1; ++i) {
    ASSERT_TRUE(dp.submit(test::greedy_ids_request(random_prompt(rng, 3 + rng() % 40), 4)).ok());
    int64_t max = 0, min = 1 << 30;
    for (auto& e : replicas.engines) {
      max = std::max(max, e->load().requests);
      min = std::min(min, e->load().requests);
    }
    EXPECT_LE(max - min, 1) << "after request " << i;
  }
}

TEST_P(DataParallel, MinimumTokensKeepsPromptTokensLevel) {
  const int n = GetParam();
  Replicas replicas(n, false);
  DataParallelController dp(replicas.pointers(), LoadBalanceMethod::kMinimumTokens);
  std::mt19937 rng(3);
  for (int i = 0; i < 10 * n; ++i) {
    const int len = 1 + static_cast<int>(rng() % 60);
    std::vector<int64_t> before;
    for (auto& e : replicas.engines) before.push_back(e->load().tokens);
    auto s = dp.submit(test::greedy_ids_request(random_prompt(rng, len), 4));
    ASSERT_TRUE(s.ok());
    // It went to a replica that held the fewest tokens.
    EXPECT_EQ(before[replica_of((*s)->rid(), n)], *std::min_element(before.begin(), before.end()));
    EXPECT_EQ(replicas.engines[replica_of((*s)->rid(), n)]->load().tokens,
              before[replica_of((*s)->rid(), n)] + len);
  }
}

TEST_P(DataParallel, CacheAwareKeepsEachSharedPrefixOnOneReplicaAndSpreadsThePrefixes) {
  const int n = GetParam();
  Replicas replicas(n, false);
  DataParallelController dp(replicas.pointers(), LoadBalanceMethod::kCacheAware);
  std::mt19937 rng(4);
  // 2n "system prompts" of 40 tokens, each followed by 4-token questions, 6 rounds shuffled.
  std::vector<std::vector<int32_t>> prefixes;
  for (int p = 0; p < 2 * n; ++p) prefixes.push_back(random_prompt(rng, 40));
  std::vector<int> order;
  for (int round = 0; round < 6; ++round) {
    for (int p = 0; p < 2 * n; ++p) order.push_back(p);
  }
  std::shuffle(order.begin() + 2 * n, order.end(), rng);  // the first round in order
  std::vector<int> home(static_cast<size_t>(2 * n), -1);
  for (int p : order) {
    std::vector<int32_t> prompt = prefixes[p];
    const std::vector<int32_t> question = random_prompt(rng, 4);
    prompt.insert(prompt.end(), question.begin(), question.end());
    auto s = dp.submit(test::greedy_ids_request(prompt, 4));
    ASSERT_TRUE(s.ok());
    const int r = replica_of((*s)->rid(), n);
    if (home[p] < 0) home[p] = r;
    EXPECT_EQ(r, home[p]) << "prefix " << p << " moved";
  }
  // Cold prefixes went to the least loaded replica: each replica is home to two prefixes.
  for (int r = 0; r < n; ++r) EXPECT_EQ(std::count(home.begin(), home.end(), r), 2) << r;
}

TEST_P(DataParallel, ConcurrentRequestsGetTheirOwnOutputsFromEveryReplica) {
  const int n = GetParam();
  Replicas replicas(n, /*start=*/true);
  DataParallelController dp(replicas.pointers(), LoadBalanceMethod::kCacheAware);
  constexpr int kThreads = 4, kPerThread = 12;
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(10 + t));
      for (int i = 0; i < kPerThread; ++i) {
        auto r = test::greedy_ids_request(random_prompt(rng, 8 + i % 9), 3 + i % 6);
        const auto expected = test::fake_reference(r.input_ids, r.max_new_tokens, kVocab, {});
        auto s = dp.submit(r);
        ASSERT_TRUE(s.ok());
        if (test::collect(**s).ids != expected) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  const std::vector<EngineStats> per_replica = dp.replica_stats();
  ASSERT_EQ(static_cast<int>(per_replica.size()), n);
  int64_t finished = 0;
  for (const EngineStats& s : per_replica) {
    EXPECT_GT(s.scheduler.finished_requests_total, 0) << "a replica served nothing";
    finished += s.scheduler.finished_requests_total;
  }
  EXPECT_EQ(finished, kThreads * kPerThread);
  const EngineStats sum = dp.get_stats();
  EXPECT_EQ(sum.scheduler.finished_requests_total, finished);
  EXPECT_EQ(sum.scheduler.kv_capacity, per_replica[0].scheduler.kv_capacity * n);
  for (auto& e : replicas.engines) {
    EXPECT_EQ(e->load().requests, 0);
    EXPECT_EQ(e->load().tokens, 0);
    EXPECT_TRUE(e->last_integrity().ok());
  }
  EXPECT_TRUE(dp.flush_cache());
}

TEST_P(DataParallel, AbortReachesTheReplicaThatOwnsTheRequest) {
  const int n = GetParam();
  Replicas replicas(n, false);
  DataParallelController dp(replicas.pointers(), LoadBalanceMethod::kRoundRobin);
  std::mt19937 rng(5);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 2 * n; ++i) {
    auto s = dp.submit(test::greedy_ids_request(random_prompt(rng, 10), 100));
    ASSERT_TRUE(s.ok());
    streams.push_back(*s);
  }
  // Aborted before the loops start: each replica sees the submit, then the abort, so none can
  // finish first; an abort sent to the wrong replica would leave its request to run to length.
  for (const auto& s : streams) dp.abort(s->rid());
  replicas.start_all();
  for (const auto& s : streams) {
    EXPECT_EQ(test::collect(*s).finish.reason, scheduler::FinishReason::kAbort) << s->rid();
  }
  dp.abort(0);  // names no request: ignored
}

INSTANTIATE_TEST_SUITE_P(Replicas, DataParallel, ::testing::Values(2, 4),
                         [](const auto& info) { return "dp" + std::to_string(info.param); });

TEST(DataParallelController, OneReplicaPassesThrough) {
  Replicas replicas(1, true);
  DataParallelController dp(replicas.pointers(), LoadBalanceMethod::kCacheAware);
  auto s = dp.submit(test::greedy_ids_request({3, 4, 5}, 4));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(test::collect(**s).ids, test::fake_reference({3, 4, 5}, 4, kVocab, {}));
  EXPECT_EQ(dp.routed_requests(), std::vector<int64_t>{1});
  EXPECT_EQ(dp.get_stats().scheduler.finished_requests_total, 1);
}

TEST(DataParallelController, AFullReplicaLeavesTheRequestToAnother) {
  // Each replica holds 16 running + 1 queued; cache_aware keeps sending the shared prompt to
  // the replica that has it (32 requests apart is still "balanced"), so its capacity spills.
  Replicas replicas(2, false, /*max_queued=*/1);
  DataParallelController dp(replicas.pointers(), LoadBalanceMethod::kCacheAware);
  std::vector<int> got;
  for (int i = 0; i < 34; ++i) {
    auto s = dp.submit(test::greedy_ids_request({7, 8, 9, 10}, 4));
    ASSERT_TRUE(s.ok()) << i << ": " << s.status().to_string();
    got.push_back(replica_of((*s)->rid(), 2));
  }
  EXPECT_EQ(std::count(got.begin(), got.end(), got.front()), 17);
  EXPECT_EQ(dp.routed_requests(), (std::vector<int64_t>{17, 17}));
  auto full = dp.submit(test::greedy_ids_request({7, 8, 9, 10}, 4));
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), StatusCode::kResourceExhausted);
}

// SGLang's routed_dp_rank: the named replica, whatever the method would choose, and no other when
// it is full; cache_aware learns the pinned prompt, so the unpinned ones that share it follow.
TEST(DataParallelController, ANamedReplicaTakesTheRequest) {
  Replicas replicas(2, false, /*max_queued=*/1);
  DataParallelController dp(replicas.pointers(), LoadBalanceMethod::kCacheAware);
  const std::vector<int32_t> prompt = {7, 8, 9, 10, 11, 12};
  for (int i = 0; i < 17; ++i) {  // replica 1's 16 running + 1 queued
    auto s = dp.submit(test::greedy_ids_request(prompt, 4), 1);
    ASSERT_TRUE(s.ok()) << i << ": " << s.status().to_string();
    EXPECT_EQ(replica_of((*s)->rid(), 2), 1);
  }
  auto full = dp.submit(test::greedy_ids_request(prompt, 4), 1);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(dp.routed_requests(), (std::vector<int64_t>{0, 17}));
  for (int64_t bad : {-1, 2}) {
    auto s = dp.submit(test::greedy_ids_request(prompt, 4), bad);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find("names no engine replica"), std::string::npos);
  }

  // One pinned request teaches cache_aware where its prompt is: the next one sharing it goes
  // there, though the other replica is less loaded.
  Replicas fresh(2, false);
  DataParallelController aware(fresh.pointers(), LoadBalanceMethod::kCacheAware);
  ASSERT_TRUE(aware.submit(test::greedy_ids_request(prompt, 4), 1).ok());
  auto follows = aware.submit(test::greedy_ids_request(prompt, 4));
  ASSERT_TRUE(follows.ok());
  EXPECT_EQ(replica_of((*follows)->rid(), 2), 1);
}

TEST(DataParallelController, BadRequestsAreRefusedAsByOneEngine) {
  Replicas replicas(2, false);
  DataParallelController dp(replicas.pointers(), LoadBalanceMethod::kShortestQueue);
  auto bad = dp.submit(test::greedy_ids_request({3, kVocab + 5}, 4));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dp.routed_requests(), (std::vector<int64_t>{0, 0}));
  auto embed = dp.encode({1, 2, 3});  // a generation model encodes nothing
  EXPECT_FALSE(embed.ok());
}

}  // namespace
}  // namespace sgl::engine
