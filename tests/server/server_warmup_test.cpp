// The server warm-up (server_warmup.h) on CPU engines: one request of min(256, context - 1, KV
// capacity - 1) prompt tokens and one output token through each replica, in turn, seen in each
// engine's counters; a replica with no room for a prompt skipped; a stop request or the timeout
// aborting the running request. (serve() calls it on CUDA only; the request is the same on any
// device.)
#include "server/server_warmup.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "engine/model_engine.h"
#include "test_data.h"

namespace sgl::server {
namespace {

std::optional<engine::ModelEngine> launch(int64_t kv_slots) {
  runner::ModelRunnerOptions ro;
  ro.num_kv_slots = kv_slots;
  auto me = engine::launch_model_engine(test::model_dir("stories260K"), ro, {});
  if (!me.ok()) {
    ADD_FAILURE() << me.status().to_string();
    return std::nullopt;
  }
  return std::move(me).value();
}

const auto kNever = [] { return false; };

scheduler::SchedulerStats stats_of(const engine::ModelEngine& replica) {
  return replica.engine->get_stats().scheduler;
}

TEST(ServerWarmup, OneRequestThroughEachReplica) {
  std::vector<engine::ModelEngine> replicas;
  for (int i = 0; i < 2; ++i) {
    auto me = launch(1024);
    ASSERT_TRUE(me);
    replicas.push_back(std::move(*me));
  }
  const auto end = warm_up(replicas, kNever);
  ASSERT_TRUE(end.ok()) << end.status().to_string();
  EXPECT_EQ(*end, WarmupEnd::kFinished);
  for (const engine::ModelEngine& r : replicas) {
    const scheduler::SchedulerStats s = stats_of(r);
    EXPECT_EQ(s.finished_requests_total, 1);
    EXPECT_EQ(s.prompt_tokens_total, kWarmupPromptTokens);  // stories260K's context is 512
    EXPECT_EQ(s.generated_tokens_total, 1);
  }
}

// A KV pool smaller than 256 tokens takes a shorter prompt (as the scheduler would refuse a
// longer one); one with no room at all is skipped.
TEST(ServerWarmup, PromptFitsTheKvCache) {
  std::vector<engine::ModelEngine> replicas;
  for (const int64_t slots : {64, 2}) {
    auto me = launch(slots);
    ASSERT_TRUE(me);
    replicas.push_back(std::move(*me));
  }
  const auto end = warm_up(replicas, kNever);
  ASSERT_TRUE(end.ok()) << end.status().to_string();
  EXPECT_EQ(stats_of(replicas[0]).prompt_tokens_total, stats_of(replicas[0]).kv_capacity - 1);
  EXPECT_EQ(stats_of(replicas[0]).finished_requests_total, 1);
  EXPECT_EQ(stats_of(replicas[1]).finished_requests_total, 0);
}

TEST(ServerWarmup, StopAndTimeoutAbortTheRequest) {
  std::vector<engine::ModelEngine> replicas;
  auto me = launch(1024);
  ASSERT_TRUE(me);
  replicas.push_back(std::move(*me));
  const auto stopped = warm_up(replicas, [] { return true; });
  ASSERT_TRUE(stopped.ok()) << stopped.status().to_string();
  EXPECT_EQ(*stopped, WarmupEnd::kStopped);
  const auto late = warm_up(replicas, kNever, std::chrono::milliseconds(0));
  ASSERT_FALSE(late.ok());
  EXPECT_NE(late.status().message().find("warm-up request of replica 0 did not finish in 0 ms"),
            std::string::npos)
      << late.status().to_string();
}

}  // namespace
}  // namespace sgl::server
