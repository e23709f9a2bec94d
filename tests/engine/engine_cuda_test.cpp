// The engine's overlap loop on the GPU, where batch N+1 is queued before batch N's ids reach the
// host and its decode inputs are read on the device (ModelBatchRunner, sampled_id_ref): each
// stories260K request, run alone, gives exactly what the normal loop gives (each batch to its end
// before the next; the same kernels), tokens and logprobs, whether it is sampled on the device
// (greedy, seeded, top logprobs) or on the host (a repetition penalty), through CUDA graphs or
// eager passes; requests running together (in mixed prefill + decode batches where the
// scheduler forms them) all finish and leave the scheduler's memory intact.
#include <gtest/gtest.h>

#include "engine/model_engine.h"
#include "scheduler/greedy_ids_request.h"
#include "stream_outcome.h"
#include "test_data.h"

namespace sgl::engine {
namespace {

using test::collect;
using test::Outcome;

runner::ModelRunnerOptions cuda_options() {
  runner::ModelRunnerOptions o;
  o.device = Device::cuda(0);
  o.num_kv_slots = 2048;  // batch and token limits: the engine's (launch_model_engine)
  return o;
}

std::vector<GenerateRequest> requests_of_every_kind() {
  const auto golden = test::golden("stories260K");
  std::vector<GenerateRequest> requests;
  for (const auto& c : golden["cases"]) {
    GenerateRequest r = test::greedy_ids_request(c["prompt_ids"].get<std::vector<int32_t>>(), 24);
    r.return_logprob = true;
    requests.push_back(r);
  }
  GenerateRequest seeded = requests[0];
  seeded.sampling.temperature = 0.8f;
  seeded.sampling.top_p = 0.9f;
  seeded.sampling.seed = 99;
  GenerateRequest top = requests[1 % requests.size()];
  top.top_logprobs_num = 5;
  GenerateRequest penalized = requests[2 % requests.size()];
  penalized.sampling.repetition_penalty = 1.3f;  // logit processing: host logits and sampling
  for (const GenerateRequest& r : {seeded, top, penalized}) requests.push_back(r);
  return requests;
}

ModelEngine launch_engine(bool overlap, bool cuda_graphs) {
  EngineOptions eo;
  eo.disable_overlap_schedule = !overlap;
  eo.scheduler.disable_radix_cache = true;  // every prefill from scratch: the same kernels
  eo.scheduler.enable_mixed_chunk = true;   // decode inputs inside extend batches too
  runner::ModelRunnerOptions ro = cuda_options();
  ro.disable_cuda_graph = !cuda_graphs;
  auto me = launch_model_engine(test::model_dir("stories260K"), ro, eo);
  EXPECT_TRUE(me.ok()) << me.status().to_string();
  if (!me.ok()) return {};
  me->engine->set_check_integrity(true);
  return std::move(me).value();
}

// Graph replays resolve the references while packing their inputs, eager passes in a kernel
// of their own: both against the normal loop with the same forward path.
class EngineOnCuda : public ::testing::TestWithParam<bool> {};

TEST_P(EngineOnCuda, OverlapLoopMatchesTheNormalLoop) {
  const bool cuda_graphs = GetParam();
  ModelEngine overlap = launch_engine(true, cuda_graphs);
  ModelEngine normal = launch_engine(false, cuda_graphs);
  ASSERT_TRUE(overlap.engine && normal.engine);
  const std::vector<GenerateRequest> requests = requests_of_every_kind();
  for (size_t i = 0; i < requests.size(); ++i) {
    Outcome got[2];
    for (int e = 0; e < 2; ++e) {
      auto stream = (e == 0 ? overlap : normal).engine->submit(requests[i]);
      ASSERT_TRUE(stream.ok()) << stream.status().to_string();
      got[e] = collect(**stream);
    }
    EXPECT_EQ(got[0].ids.size(), 24u) << "request " << i;
    EXPECT_EQ(got[0].ids, got[1].ids) << "request " << i;
    ASSERT_EQ(got[0].logprobs.size(), got[1].logprobs.size()) << "request " << i;
    for (size_t s = 0; s < got[0].logprobs.size(); ++s) {
      EXPECT_EQ(got[0].logprobs[s], got[1].logprobs[s]) << "request " << i << " step " << s;
    }
    ASSERT_EQ(got[0].top.size(), requests[i].top_logprobs_num > 0 ? 24u : 0u);
    ASSERT_EQ(got[0].top.size(), got[1].top.size());
    for (size_t s = 0; s < got[0].top.size(); ++s) {
      ASSERT_EQ(got[0].top[s].size(), got[1].top[s].size());
      for (size_t k = 0; k < got[0].top[s].size(); ++k) {
        EXPECT_EQ(got[0].top[s][k].id, got[1].top[s][k].id);
      }
    }
  }
  Engine& engine = *overlap.engine;

  // Together: first without the penalized request (every batch launched on the device, rows
  // of several requests referring to the batch before), then all of them (host batches while
  // the penalized one runs); each request gets its full length. (Exact outputs of batched
  // pipelined runs: model_batch_runner_cuda_test.)
  for (const size_t count : {requests.size() - 1, requests.size()}) {
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (size_t i = 0; i < count; ++i) {
      auto stream = engine.submit(requests[i]);
      ASSERT_TRUE(stream.ok()) << stream.status().to_string();
      streams.push_back(*stream);
    }
    for (size_t i = 0; i < streams.size(); ++i) {
      EXPECT_EQ(collect(*streams[i]).ids.size(), 24u) << "request " << i;
    }
  }
  EXPECT_TRUE(engine.last_integrity().ok()) << engine.last_integrity().to_string();
}

INSTANTIATE_TEST_SUITE_P(ForwardPaths, EngineOnCuda, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "graphs" : "eager"; });

}  // namespace
}  // namespace sgl::engine
