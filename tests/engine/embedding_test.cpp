// Embedding models through the engine (Engine::encode): the tiny Qwen3 embedding models that
// scripts/make_tiny_embedding_model.py writes (the bare decoder, sentence-transformers' modules)
// give transformers' vectors (data/tiny_qwen3_embedding_reference.json) within 1e-4 in f32 on
// the CPU, for last-token (normalised) and mean (not normalised) pooling, alone and batched
// together, whole and in prefill chunks, with and without the radix cache and the overlap loop.
// Built with SGL_TEST_ON_CUDA: the same on the GPU in float32 (our kernels held to the CPU's
// bounds).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "engine/model_engine.h"
#include "scheduler/greedy_ids_request.h"
#include "stream_outcome.h"
#include "test_data.h"

namespace sgl::engine {
namespace {

constexpr double kReferenceTol = 1e-4;  // the bar: transformers' vectors, f32
// The same vector computed in another batch or other chunks: f32 sums in another order.
constexpr double kSelfTol = 1e-5;

struct Config {
  const char* name;
  const char* model;  // "last" or "mean": the reference's key and the model's suffix
  bool radix;
  int64_t chunk;  // chunked_prefill_size; <= 0: off
  bool overlap;
  int tp_size = 1;  // tensor-parallel ranks (the CPU only)
};

struct Case {
  std::vector<int32_t> ids;
  std::vector<float> expected;
};

std::vector<Case> reference_cases(const std::string& pooling) {
  const nlohmann::json ref =
      test::read_json(sgl::test::test_data_dir("engine") / "tiny_qwen3_embedding_reference.json");
  std::vector<Case> cases;
  for (const auto& c : ref["cases"]) {
    cases.push_back(
        {c["input_ids"].get<std::vector<int32_t>>(), c[pooling].get<std::vector<float>>()});
  }
  return cases;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(double(a[i]) - double(b[i])));
  return d;
}

struct Encoded {
  std::vector<float> embedding;
  test::Outcome outcome;
};

// Reads the stream to its end, keeping the embedding the final event carries.
Encoded collect_embedding(RequestStream& stream) {
  Encoded out;
  for (;;) {
    auto event = stream.next(std::chrono::seconds(60));
    if (!event) {
      ADD_FAILURE() << "stream " << stream.rid() << " timed out";
      return out;
    }
    EXPECT_TRUE(event->token_ids.empty()) << "an embedding request generated tokens";
    if (!event->embedding.empty()) {
      EXPECT_TRUE(out.embedding.empty()) << "two embeddings for one request";
      out.embedding = std::move(event->embedding);
    }
    out.outcome.usage = event->usage;
    if (event->finished) {
      EXPECT_TRUE(event->embedding.empty() || !out.embedding.empty());
      out.outcome.finish = *event->finished;
      return out;
    }
  }
}

// Where the build wrote the test models (scripts/make_tiny_embedding_model.py);
// SGL_EMBEDDING_MODELS in the environment overrides it (binaries carried to the GPU machine,
// scripts/gpu_check.sh).
std::string embedding_models_dir() {
  return test::path_from_env("SGL_EMBEDDING_MODELS",
                             test::test_build_dir("engine") / "embedding_models")
      .string();
}

runner::ModelRunnerOptions runner_options(bool is_embedding) {
  runner::ModelRunnerOptions ro;
#ifdef SGL_TEST_ON_CUDA
  ro.device = Device::cuda(0);
  ro.dtype = "float32";
#endif
  ro.num_kv_slots = 4096;
  ro.is_embedding = is_embedding;
  return ro;
}

ModelEngine launch(const Config& c) {
  EngineOptions eo;
  eo.scheduler.disable_radix_cache = !c.radix;
  eo.scheduler.chunked_prefill_size = c.chunk;
  eo.scheduler.max_running_requests = 8;
  eo.disable_overlap_schedule = !c.overlap;
  runner::ModelRunnerOptions ro = runner_options(true);
  ro.tp_size = c.tp_size;
  const std::string dir = embedding_models_dir() + "/tiny-qwen3-embedding-" + std::string(c.model);
  auto me = launch_model_engine(dir, ro, eo);
  EXPECT_TRUE(me.ok()) << me.status().to_string();
  if (!me.ok()) return {};
  me->engine->set_check_integrity(true);
  return std::move(*me);
}

class Embeddings : public ::testing::TestWithParam<Config> {};

TEST_P(Embeddings, EachPromptAloneMatchesTransformers) {
  const Config c = GetParam();
  ModelEngine me = launch(c);
  ASSERT_NE(me.engine, nullptr);
  const PoolerConfig pooler = me.model_runner->pooler();
  EXPECT_EQ(pooler.type, std::string(c.model) == "last" ? PoolingType::kLast : PoolingType::kMean);
  EXPECT_EQ(pooler.normalize, std::string(c.model) == "last");
  double worst = 0;
  for (const Case& k : reference_cases(c.model)) {
    auto stream = me.engine->encode(k.ids);
    ASSERT_TRUE(stream.ok()) << stream.status().to_string();
    const Encoded got = collect_embedding(**stream);
    ASSERT_EQ(got.embedding.size(), k.expected.size());
    const double diff = max_abs_diff(got.embedding, k.expected);
    EXPECT_LT(diff, kReferenceTol) << c.name << ": " << k.ids.size() << " tokens";
    worst = std::max(worst, diff);
    EXPECT_EQ(got.outcome.finish.reason, scheduler::FinishReason::kLength);
    EXPECT_EQ(got.outcome.usage.prompt_tokens, static_cast<int32_t>(k.ids.size()));
    EXPECT_EQ(got.outcome.usage.completion_tokens, 0);
  }
  EXPECT_TRUE(me.engine->last_integrity().ok()) << me.engine->last_integrity().to_string();
  std::cout << c.name << ": max |sgl.cpp - transformers| alone " << worst << "\n";
}

TEST_P(Embeddings, BatchedTogetherEqualEachAlone) {
  const Config c = GetParam();
  ModelEngine me = launch(c);
  ASSERT_NE(me.engine, nullptr);
  const std::vector<Case> cases = reference_cases(c.model);
  // Each prompt alone first (it also warms the radix cache), then every prompt three times at
  // once: prefills share batches, long ones are chunked beside short ones, repeats hit the cache.
  std::vector<std::vector<float>> alone;
  for (const Case& k : cases) {
    auto stream = me.engine->encode(k.ids);
    ASSERT_TRUE(stream.ok());
    alone.push_back(collect_embedding(**stream).embedding);
  }
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int round = 0; round < 3; ++round) {
    for (const Case& k : cases) {
      auto stream = me.engine->encode(k.ids);
      ASSERT_TRUE(stream.ok());
      streams.push_back(*stream);
    }
  }
  double worst_self = 0, worst_ref = 0;
  int32_t cached = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    const Case& k = cases[i % cases.size()];
    const Encoded got = collect_embedding(*streams[i]);
    worst_self = std::max(worst_self, max_abs_diff(got.embedding, alone[i % cases.size()]));
    worst_ref = std::max(worst_ref, max_abs_diff(got.embedding, k.expected));
    EXPECT_EQ(got.outcome.usage.prompt_tokens, static_cast<int32_t>(k.ids.size()));
    cached += got.outcome.usage.cached_tokens;
  }
  EXPECT_LT(worst_self, kSelfTol) << c.name;
  EXPECT_LT(worst_ref, kReferenceTol) << c.name;
  // Last-token pooling reuses cached prefixes as generation does; mean pooling reads every
  // token's hidden state, so it computes every prompt token.
  if (c.radix && std::string(c.model) == "last") {
    EXPECT_GT(cached, 0) << c.name;
  } else {
    EXPECT_EQ(cached, 0) << c.name;
  }
  EXPECT_TRUE(me.engine->last_integrity().ok()) << me.engine->last_integrity().to_string();
  const EngineStats stats = me.engine->get_stats();
  EXPECT_EQ(stats.scheduler.num_running, 0);
  EXPECT_EQ(stats.scheduler.generated_tokens_total, 0);
  EXPECT_EQ(stats.scheduler.finished_requests_total, static_cast<int64_t>(4 * cases.size()));
  EXPECT_TRUE(me.engine->flush_cache());
  EXPECT_EQ(me.engine->get_stats().scheduler.kv_used, 0);
  std::cout << c.name << ": batched vs alone " << worst_self << ", vs transformers " << worst_ref
            << ", cached prompt tokens " << cached << "\n";
}

std::vector<Config> configs() {
  std::vector<Config> out = {Config{"last_whole", "last", true, 0, true},
                             Config{"last_chunk16", "last", true, 16, true},
                             Config{"last_chunk7_no_radix_no_overlap", "last", false, 7, false},
                             Config{"mean_whole", "mean", true, 0, true},
                             Config{"mean_chunk16", "mean", true, 16, true},
                             Config{"mean_chunk7_no_overlap", "mean", true, 7, false}};
#ifndef SGL_TEST_ON_CUDA
  // Tensor parallelism: the vocab-parallel embedding and the split layers pool the same vectors.
  out.push_back(Config{"last_chunk16_tp2", "last", true, 16, true, 2});
  out.push_back(Config{"mean_chunk7_tp4", "mean", true, 7, false, 4});
#endif
  return out;
}

INSTANTIATE_TEST_SUITE_P(Configs, Embeddings, ::testing::ValuesIn(configs()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(EmbeddingEngine, GenerationAndEncodeAreRefusedOnTheOtherKindOfModel) {
  ModelEngine embedding = launch(Config{"last", "last", true, 0, true});
  ASSERT_NE(embedding.engine, nullptr);
  auto generate = embedding.engine->submit(test::greedy_ids_request({1, 2, 3}, 4));
  ASSERT_FALSE(generate.ok());
  EXPECT_NE(generate.status().message().find("embedding model"), std::string::npos)
      << generate.status().message();

  auto generation =
      launch_model_engine(test::model_dir("tiny-qwen3"), runner_options(false), EngineOptions{});
  ASSERT_TRUE(generation.ok()) << generation.status().to_string();
  auto encode = generation->engine->encode({1, 2, 3});
  ASSERT_FALSE(encode.ok());
  EXPECT_NE(encode.status().message().find("--is-embedding"), std::string::npos);
}

TEST(EmbeddingEngine, ACausalLmCheckpointServedAsAnEmbeddingModel) {
  // tiny-qwen3 itself: `model.`-prefixed tensors and an LM head (not loaded), no modules.json,
  // so last-token pooling, normalised: the last-token model's vectors.
  auto me =
      launch_model_engine(test::model_dir("tiny-qwen3"), runner_options(true), EngineOptions{});
  ASSERT_TRUE(me.ok()) << me.status().to_string();
  EXPECT_EQ(me->model_runner->pooler().type, PoolingType::kLast);
  EXPECT_TRUE(me->model_runner->pooler().normalize);
  for (const Case& k : reference_cases("last")) {
    auto stream = me->engine->encode(k.ids);
    ASSERT_TRUE(stream.ok());
    EXPECT_LT(max_abs_diff(collect_embedding(**stream).embedding, k.expected), kReferenceTol);
  }
}

TEST(EmbeddingEngine, BadPromptsAreRefusedAtSubmission) {
  ModelEngine me = launch(Config{"mean", "mean", true, 16, true});
  ASSERT_NE(me.engine, nullptr);
  EXPECT_FALSE(me.engine->encode({}).ok());
  EXPECT_FALSE(me.engine->encode({1, 1000}).ok());                     // past the vocabulary
  EXPECT_FALSE(me.engine->encode(std::vector<int32_t>(512, 1)).ok());  // the whole context
}

}  // namespace
}  // namespace sgl::engine
