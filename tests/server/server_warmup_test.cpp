// The server warm-up (server_warmup.h) on CPU engines: one request of min(256, context - 1)
// prompt tokens and one output token through each replica, in turn, seen in each engine's
// counters; a replica whose request cannot run is named in the error. (serve() calls it on
// CUDA only; the request is the same on any device.)
#include "server/server_warmup.h"

#include <gtest/gtest.h>

#include <vector>

#include "engine/model_engine.h"
#include "test_data.h"

namespace sgl::server {
namespace {

engine::ModelEngine launch(int64_t kv_slots) {
  runner::ModelRunnerOptions ro;
  ro.num_kv_slots = kv_slots;
  auto me = engine::launch_model_engine(test::model_dir("stories260K"), ro, {});
  EXPECT_TRUE(me.ok()) << me.status().to_string();
  return std::move(me).value();
}

TEST(ServerWarmup, OneRequestThroughEachReplica) {
  std::vector<engine::ModelEngine> replicas;
  replicas.push_back(launch(1024));
  replicas.push_back(launch(1024));
  ASSERT_TRUE(warm_up(replicas).ok());
  for (const engine::ModelEngine& r : replicas) {
    const scheduler::SchedulerStats s = r.engine->get_stats().scheduler;
    EXPECT_EQ(s.finished_requests_total, 1);
    EXPECT_EQ(s.prompt_tokens_total, kWarmupPromptTokens);  // stories260K's context is 512
    EXPECT_EQ(s.generated_tokens_total, 1);
  }
}

TEST(ServerWarmup, NamesTheReplicaWhoseRequestFails) {
  std::vector<engine::ModelEngine> replicas;
  replicas.push_back(launch(1024));
  replicas.push_back(launch(64));  // too few KV slots for the prompt
  const Status s = warm_up(replicas);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("warm-up request of replica 1"), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace sgl::server
