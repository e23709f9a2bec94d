// Classification and reward models through the engine (Engine::encode): the tiny models that
// scripts/make_tiny_classifier_models.py writes (tiny LMs under score heads made of their LM
// heads' rows) score each golden prompt as transformers' last logits say (golden/<lm>.json), in
// f32 on the CPU within the golden tests' logit bound, alone and batched, whole and in prefill
// chunks, with and without the radix cache. They are served as embedding models without
// --is-embedding, as SGLang serves them. Built with SGL_TEST_ON_CUDA: the same on the GPU in
// float32, and with SGL_TEST_CUDA_BF16 too in bfloat16 against the golden tests' bf16 bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model_engine.h"
#include "model/model_config.h"
#include "runner/model_runner.h"
#include "scheduler/greedy_ids_request.h"
#include "test_data.h"

namespace sgl::engine {
namespace {

// The golden tests' bound on raw last-position logits (tests/runner/golden_parity_test.cpp): f32
// 2e-3; bf16 max(0.15, 1.5 x transformers' own bf16 error on the LM, measured by
// scripts/measure_transformers_bf16_error.py).
#ifdef SGL_TEST_CUDA_BF16
double logit_tol(const std::string& lm) {
  const nlohmann::json measured = test::read_json(sgl::test::test_data_dir("runner") /
                                                  "transformers_bf16_error.json")["models"][lm];
  return std::max(0.15, 1.5 * measured["last_logits"].get<double>());
}
// The same scores in another batch or other chunks: bf16 activations round differently.
constexpr double kSelfTol = 0.15;
#else
double logit_tol(const std::string&) { return 2e-3; }
constexpr double kSelfTol = 1e-5;
#endif

std::filesystem::path classifier_models_dir() {
  return test::path_from_env("SGL_CLASSIFIER_MODELS",
                             test::test_build_dir("engine") / "classifier_models");
}

struct Model {
  const char* name;  // under classifier_models_dir()
  const char* lm;    // the golden it derives from
  std::vector<std::string> labels;
  bool reward = false;  // the reward head (else one linear layer)
};

const Model kLlama{"tiny-llama-classifier", "tiny-llama", {"negative", "neutral", "positive"}};
const Model kQwen3{"tiny-qwen3-classifier", "tiny-qwen3", {"LABEL_0", "LABEL_1", "LABEL_2"}};
const Model kReward{"tiny-qwen2-reward", "tiny-qwen2", {"LABEL_0"}, true};
const Model kQwen3Reward{"tiny-qwen3-reward", "tiny-qwen3", {"LABEL_0"}, true};

struct Case {
  std::vector<int32_t> ids;
  std::vector<double> expected;
  double logit_tol = 0;  // the golden's bound on a last logit
  // What an error in one hidden value can grow to in a score: a reward sums its hidden units
  // times |w| (so both bounds scale by it); a linear head takes each once.
  double gain = 1;
  double tol() const { return logit_tol * gain; }  // the bound on a score
};

// Each golden prompt's scores from transformers' last logits and the heads' constants.
std::vector<Case> cases_for(const Model& m) {
  const nlohmann::json heads = test::read_json(classifier_models_dir() / "classifier_heads.json");
  const auto label_ids = heads["label_ids"].get<std::vector<int64_t>>();
  const auto bias = heads["bias"].get<std::vector<double>>();
  const auto reward_ids = heads["reward_ids"].get<std::vector<int64_t>>();
  const auto b1 = heads["reward_b1"].get<std::vector<double>>();
  const auto w = heads["reward_w"].get<std::vector<double>>();
  const nlohmann::json golden = test::golden(m.lm);
  std::vector<Case> out;
  for (const auto& c : golden["cases"]) {
    const auto last = c["prefill"]["last_logits"].get<std::vector<double>>();
    Case k{c["prompt_ids"].get<std::vector<int32_t>>(), {}, logit_tol(m.lm)};
    if (m.reward) {
      // Each hidden unit carries its logit's error through ReLU times |w|.
      double reward = heads["reward_b"].get<double>(), weight = 0;
      for (size_t j = 0; j < w.size(); ++j) {
        reward += w[j] * std::max(0.0, last[reward_ids[j]] + b1[j]);
        weight += std::abs(w[j]);
      }
      k.expected = {reward};
      k.gain = weight;
    } else {
      for (size_t i = 0; i < label_ids.size(); ++i) {
        k.expected.push_back(last[label_ids[i]] +
                             (std::string_view(m.name) == kQwen3.name ? bias[i] : 0.0));
      }
    }
    out.push_back(std::move(k));
  }
  return out;
}

runner::ModelRunnerOptions runner_options() {
  runner::ModelRunnerOptions ro;
#ifdef SGL_TEST_CUDA_BF16
  ro.device = Device::cuda(0);
  ro.dtype = "bfloat16";
#elif defined(SGL_TEST_ON_CUDA)
  ro.device = Device::cuda(0);
  ro.dtype = "float32";
#endif
  ro.num_kv_slots = 4096;
  return ro;  // is_embedding false: the architecture makes these embedding models
}

ModelEngine launch(const Model& m, bool radix, int64_t chunk, int tp_size = 1) {
  EngineOptions eo;
  eo.scheduler.disable_radix_cache = !radix;
  eo.scheduler.chunked_prefill_size = chunk;
  eo.scheduler.max_running_requests = 8;
  runner::ModelRunnerOptions ro = runner_options();
  ro.tp_size = tp_size;
  auto me = launch_model_engine(classifier_models_dir() / m.name, ro, eo);
  EXPECT_TRUE(me.ok()) << me.status().to_string();
  if (!me.ok()) return {};
  me->engine->set_check_integrity(true);
  return std::move(*me);
}

std::vector<float> collect_scores(RequestStream& stream) {
  std::vector<float> scores;
  for (;;) {
    auto event = stream.next(std::chrono::seconds(60));
    if (!event) {
      ADD_FAILURE() << "stream " << stream.rid() << " timed out";
      return scores;
    }
    EXPECT_TRUE(event->token_ids.empty()) << "a classification generated tokens";
    if (!event->embedding.empty()) scores = std::move(event->embedding);
    if (event->finished) return scores;
  }
}

double max_abs_diff(const std::vector<float>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return INFINITY;
  double d = 0;
  for (size_t i = 0; i < got.size(); ++i) d = std::max(d, std::abs(got[i] - want[i]));
  return d;
}

struct Config {
  const char* name;
  const Model* model;
  bool radix;
  int64_t chunk;    // chunked_prefill_size; <= 0: off
  int tp_size = 1;  // tensor-parallel ranks (the CPU only)
};

class Classifiers : public ::testing::TestWithParam<Config> {};

TEST_P(Classifiers, ScoresAreTheGoldenLogitsThroughTheHead) {
  const Config c = GetParam();
  ModelEngine me = launch(*c.model, c.radix, c.chunk, c.tp_size);
  ASSERT_NE(me.engine, nullptr);
  const model::ModelConfig& config = me.model_runner->config();
  EXPECT_EQ(config.labels, c.model->labels);
  EXPECT_EQ(me.model_runner->pooler().type, PoolingType::kLast);
  EXPECT_FALSE(me.model_runner->pooler().normalize);
  const std::vector<Case> cases = cases_for(*c.model);
  ASSERT_EQ(cases.size(), 4u) << "the golden's prompts";
  std::vector<std::vector<float>> alone;
  double worst = 0;
  for (const Case& k : cases) {
    auto stream = me.engine->encode(k.ids);
    ASSERT_TRUE(stream.ok()) << stream.status().to_string();
    alone.push_back(collect_scores(**stream));
    const double diff = max_abs_diff(alone.back(), k.expected);
    EXPECT_LT(diff, k.tol()) << c.name << ": " << k.ids.size() << " tokens";
    worst = std::max(worst, diff / k.tol());
  }
  // Every prompt twice at once: prefills share batches, long ones are chunked beside short
  // ones, repeats hit the cache.
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int round = 0; round < 2; ++round) {
    for (const Case& k : cases) {
      auto stream = me.engine->encode(k.ids);
      ASSERT_TRUE(stream.ok());
      streams.push_back(*stream);
    }
  }
  double worst_self = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    const Case& k = cases[i % cases.size()];
    const std::vector<float>& want = alone[i % cases.size()];
    const double diff =
        max_abs_diff(collect_scores(*streams[i]), std::vector<double>(want.begin(), want.end()));
    EXPECT_LT(diff, kSelfTol * k.gain) << c.name << ": " << k.ids.size() << " tokens";
    worst_self = std::max(worst_self, diff / k.gain);
  }
  EXPECT_TRUE(me.engine->last_integrity().ok()) << me.engine->last_integrity().to_string();
  std::cout << c.name << ": worst |score - golden| " << worst
            << " of its bound, batched vs alone (over the gain) " << worst_self << "\n";
}

std::vector<Config> configs() {
  std::vector<Config> out = {Config{"llama_whole", &kLlama, true, 0},
                             Config{"llama_chunk7_no_radix", &kLlama, false, 7},
                             Config{"qwen3_bias_chunk16", &kQwen3, true, 16},
                             Config{"qwen2_reward_whole", &kReward, true, 0},
                             Config{"qwen2_reward_chunk7", &kReward, true, 7},
                             Config{"qwen3_reward_chunk16", &kQwen3Reward, true, 16}};
#ifndef SGL_TEST_ON_CUDA
  // Tensor parallelism: every rank holds the head whole and scores the same rows.
  out.push_back(Config{"qwen3_bias_chunk7_tp2", &kQwen3, true, 7, 2});
  out.push_back(Config{"qwen2_reward_tp2", &kReward, true, 0, 2});
#endif
  return out;
}

INSTANTIATE_TEST_SUITE_P(Configs, Classifiers, ::testing::ValuesIn(configs()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ClassifierModels, GenerationIsRefused) {
  ModelEngine me = launch(kLlama, true, 0);
  ASSERT_NE(me.engine, nullptr);
  auto generate = me.engine->submit(test::greedy_ids_request({1, 2, 3}, 4));
  ASSERT_FALSE(generate.ok());
  EXPECT_NE(generate.status().message().find("embedding model"), std::string::npos)
      << generate.status().message();
}

TEST(ClassifierModels, ARunnerWithoutPoolingSaysWhatTheModelIs) {
  // The engine serves a task head as an embedding model; a runner made directly for generation
  // is told why it cannot load one.
  auto runner =
      runner::ModelRunner::create(classifier_models_dir() / kLlama.name, runner_options());
  ASSERT_FALSE(runner.ok());
  EXPECT_NE(runner.status().message().find("LlamaForSequenceClassification scores prompts"),
            std::string::npos)
      << runner.status().message();
}

}  // namespace
}  // namespace sgl::engine
