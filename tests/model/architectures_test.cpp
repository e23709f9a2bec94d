// The architecture table: its keys are unique, and config.json parsing (by architecture name and
// by model_type), the quirks and the registry all follow it.
#include "model/architectures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "kernels/moe.h"
#include "model/model_registry.h"
#include "model/weight_source.h"
#include "model_test_util.h"

namespace sgl::model {
namespace {

using Json = nlohmann::json;

// A tiny config of architecture `name` (model_type `model_type`; absent keys left out), with the
// MoE keys the MoE architectures read (the dense ones ignore them).
Json tiny_config(std::string_view name, std::string_view model_type) {
  Json j = Json::parse(R"({
    "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 128,
    "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16,
    "shared_expert_intermediate_size": 24
  })");
  if (!name.empty()) j["architectures"] = {std::string(name)};
  if (!model_type.empty()) j["model_type"] = std::string(model_type);
  return j;
}

TEST(ArchitecturesTest, KeysAreUniqueAndFindable) {
  std::set<std::string_view> names, model_types;
  std::set<std::string> gguf_names;
  for (const Architecture& a : architectures()) {
    SCOPED_TRACE(std::string(a.name));
    EXPECT_TRUE(names.insert(a.name).second);
    EXPECT_EQ(find_architecture(a.name), &a);
    // Draft heads and task heads are found by name only.
    EXPECT_EQ(a.model_type.empty(),
              a.draft != DraftKind::kNone || a.task_head != TaskHead::kLmHead);
    if (!a.model_type.empty()) {
      EXPECT_TRUE(model_types.insert(a.model_type).second);
      EXPECT_EQ(find_architecture_by_model_type(a.model_type), &a);
    }
    if (!a.gguf_name.empty()) {  // unique with whether the file declares experts
      const bool experts = a.moe != MoeStyle::kNone;
      EXPECT_TRUE(gguf_names.insert(std::string(a.gguf_name) + (experts ? "+experts" : "")).second);
      EXPECT_EQ(find_architecture_by_gguf_name(a.gguf_name, experts), &a);
    }
  }
  EXPECT_EQ(find_architecture("FooForCausalLM"), nullptr);
  EXPECT_EQ(find_architecture_by_gguf_name(""), nullptr);
  EXPECT_EQ(supported_architecture_names(),
            "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
            "MixtralForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, "
            "LlamaForSequenceClassification, Qwen2ForSequenceClassification, "
            "Qwen3ForSequenceClassification, Qwen2ForRewardModel, Qwen3ForRewardModel");
  EXPECT_EQ(supported_gguf_names(), "llama, qwen2, qwen3, qwen2moe, qwen3moe");
  EXPECT_EQ(find_architecture_by_gguf_name("llama", true)->name, "MixtralForCausalLM");
  EXPECT_EQ(find_architecture_by_gguf_name("qwen3moe", false), nullptr);
}

// Each entry parses (or is refused, when unsupported) whether the config names it or only its
// model_type, with the quirks the table gives it; each supported one is created by the
// registry.
TEST(ArchitecturesTest, ConfigParsingAndRegistryFollowTheTable) {
  for (const Architecture& a : architectures()) {
    SCOPED_TRACE(std::string(a.name));
    if (a.draft != DraftKind::kNone) {
      // A draft head's config parses (EagleDraftModel reads it); the registry refuses it.
      Result<ModelConfig> c = parse_model_config(tiny_config(a.name, "llama").dump(), "config");
      ASSERT_TRUE(c.ok()) << c.status().to_string();
      EXPECT_EQ(c->architecture, a.name);
      WeightLoader dummy(nullptr, cpu_allocator(), DType::kF32, backend::Stream{});
      test_util::expect_status(
          create_model(*c, dummy, cpu_allocator(), ModelOptions{16, 4, 0}).status(),
          StatusCode::kUnimplemented, {std::string(a.name), "EAGLE draft head"});
      continue;
    }
    if (a.task_head != TaskHead::kLmHead) {
      // A classification or reward model's config parses by name, with its labels; the model
      // loads as an embedding model only.
      Result<ModelConfig> c = parse_model_config(tiny_config(a.name, "").dump(), "config.json");
      ASSERT_TRUE(c.ok()) << c.status().to_string();
      EXPECT_EQ(c->architecture, a.name);
      EXPECT_EQ(c->labels.size(), a.task_head == TaskHead::kRewardModel ? 1u : 2u);
      EXPECT_EQ(c->attention_bias, a.qkv_bias);
      EXPECT_EQ(c->qk_norm, a.qk_norm);
      WeightLoader dummy(nullptr, cpu_allocator(), DType::kF32, backend::Stream{});
      test_util::expect_status(
          create_model(*c, dummy, cpu_allocator(), ModelOptions{16, 4, 0}).status(),
          StatusCode::kInvalidArgument, {std::string(a.name), "--is-embedding"});
      ModelOptions pooling{16, 4, 0};
      pooling.is_embedding = true;
      WeightLoader weights(nullptr, cpu_allocator(), DType::kF32, backend::Stream{});
      Result<std::unique_ptr<Model>> model = create_model(*c, weights, cpu_allocator(), pooling);
      ASSERT_TRUE(model.ok()) << model.status().to_string();
      continue;
    }
    for (const Json& j : {tiny_config(a.name, ""), tiny_config("", a.model_type)}) {
      Result<ModelConfig> c = parse_model_config(j.dump(), "config.json");
      if (!a.supported()) {
        test_util::expect_status(c.status(), StatusCode::kUnimplemented,
                                 {std::string(a.name), supported_architecture_names()});
        continue;
      }
      ASSERT_TRUE(c.ok()) << c.status().to_string();
      EXPECT_EQ(c->architecture, a.name);
      EXPECT_EQ(c->model_type, a.model_type);
      EXPECT_EQ(c->attention_bias, a.qkv_bias);
      EXPECT_EQ(c->qk_norm, a.qk_norm);
      EXPECT_EQ(c->num_experts, a.moe == MoeStyle::kNone ? 0 : 4);
      EXPECT_EQ(c->shared_expert_intermediate_size, a.shared_expert ? 24 : 0);

      WeightLoader dummy(nullptr, cpu_allocator(), DType::kF32, backend::Stream{});
      Result<std::unique_ptr<Model>> model =
          create_model(*c, dummy, cpu_allocator(), ModelOptions{16, 4, 0});
      ASSERT_TRUE(model.ok()) << model.status().to_string();
      EXPECT_EQ((*model)->config().architecture, a.name);
    }
  }
  ModelConfig unknown;
  unknown.architecture = "DeepseekV3ForCausalLM";
  WeightLoader dummy(nullptr, cpu_allocator(), DType::kF32, backend::Stream{});
  test_util::expect_status(create_model(unknown, dummy, cpu_allocator(), {}).status(),
                           StatusCode::kUnimplemented,
                           {"DeepseekV3ForCausalLM", supported_architecture_names()});
}

// Each MoE architecture's model builds the MLP its family runs on each layer: Mixtral a sparse
// block everywhere (of width intermediate_size), the Qwen MoE families a dense MLP on the layers
// mlp_only_layers names, and Qwen2-MoE's sparse blocks a gated shared expert.
TEST(ArchitecturesTest, MoeModelsBuildTheirFamilysMlps) {
  // tiny_config: hidden 32, intermediate 48, 4 experts of width 16, shared expert width 24.
  const int64_t h = 32, dense = 3 * h * 48, router = 4 * h;
  const int64_t experts = 4 * 3 * h * 16, shared = 3 * h * 24 + h;
  auto weights = [](const Json& j) {
    Result<ModelConfig> c = parse_model_config(j.dump(), "config.json");
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    WeightLoader dummy(nullptr, cpu_allocator(), DType::kF32, backend::Stream{});
    Result<ModelMemoryPlan> plan = plan_model(*c, dummy, ModelOptions{16, 4, 0});
    EXPECT_TRUE(plan.ok()) << plan.status().to_string();
    return plan.ok() ? plan->weights / 4 : 0;
  };
  const int64_t llama = weights(tiny_config("LlamaForCausalLM", ""));
  EXPECT_EQ(weights(tiny_config("MixtralForCausalLM", "")),
            llama + 2 * (router + 4 * 3 * h * 48 - dense));
  for (const std::string name : {"Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM"}) {
    SCOPED_TRACE(name);
    const int64_t sparse = router + experts + (name == "Qwen2MoeForCausalLM" ? shared : 0);
    Json j = tiny_config(name, "");
    const int64_t all_sparse = weights(j);
    j["mlp_only_layers"] = {0};
    EXPECT_EQ(all_sparse - weights(j), sparse - dense);
  }
}

// The memory plan of a MoE checkpoint counts every expert's weights (stacked from the per-expert
// tensors) and the fused-MoE workspace for the largest batch.
TEST(ArchitecturesTest, MoePlanCountsExpertsAndWorkspace) {
  const auto dir = test_util::testdata_models_dir() / "tiny-qwen3-moe";
  Result<ModelConfig> config = load_model_config(dir);
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  auto source = SafetensorsWeightSource::open(dir);
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  WeightLoader weights(source->get(), cpu_allocator(), DType::kF32, backend::Stream{});
  const ModelOptions options{64, 4, 128};
  Result<ModelMemoryPlan> plan = plan_model(*config, weights, options);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  // hidden 128, 4 heads / 2 KV heads of 32, 8 experts of width 64, vocab 1000, 2 layers.
  const int64_t attention = 128 * 128 + 2 * 64 * 128 + 128 * 128 + 2 * 32;
  const int64_t moe = 8 * 128 + 8 * 3 * 64 * 128;
  const int64_t params = 2 * (attention + moe + 2 * 128) + 2 * 1000 * 128 + 128;
  EXPECT_EQ(plan->weights, params * 4);
  const int64_t workspace = kernels::fused_moe_workspace_bytes(Device::cpu(), 64, 2, 8, 128, 64);
  // Scratch of the MoE block: router logits, top-k weights and ids, workspace, output.
  EXPECT_GE(plan->activations, workspace + 64 * (8 + 2 + 2 + 128) * 4);
}

// The tensors of `model`'s checkpoint that its load (as `edit` changes the config) never reads.
std::vector<std::string> unread_tensors(const std::string& model,
                                        const std::function<void(ModelConfig&)>& edit = {}) {
  const auto dir = test_util::testdata_models_dir() / model;
  Result<ModelConfig> config = load_model_config(dir);
  EXPECT_TRUE(config.ok()) << config.status().to_string();
  if (!config.ok()) return {};
  if (edit) edit(*config);
  auto source = SafetensorsWeightSource::open(dir);
  EXPECT_TRUE(source.ok()) << source.status().to_string();
  if (!source.ok()) return {};
  WeightLoader weights(source->get(), cpu_allocator(), DType::kF32, backend::Stream{});
  Result<ModelMemoryPlan> plan = plan_model(*config, weights, ModelOptions{64, 4, 128});
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  return weights.unread_tensors();
}

// Each test model's load reads every tensor of its checkpoint (a tied model's has no LM head);
// the load warns about the ones it does not (warn_unread_tensors).
TEST(ArchitecturesTest, TestModelsReadEveryCheckpointTensor) {
  for (const std::string model : {"tiny-llama", "tiny-llama-tied", "tiny-qwen2", "tiny-qwen3",
                                  "tiny-mixtral", "tiny-qwen2-moe", "tiny-qwen3-moe"}) {
    SCOPED_TRACE(model);
    EXPECT_EQ(unread_tensors(model), std::vector<std::string>{});
  }
}

// A config that does not match its checkpoint leaves tensors unread: here Qwen2's q/k/v biases
// under a config that declares none.
TEST(ArchitecturesTest, TensorsAConfigDoesNotDeclareAreUnread) {
  const std::vector<std::string> unread =
      unread_tensors("tiny-qwen2", [](ModelConfig& c) { c.attention_bias = false; });
  ASSERT_FALSE(unread.empty());
  for (const std::string& name : unread) {
    EXPECT_TRUE(name.ends_with("_proj.bias")) << name;
  }
  EXPECT_TRUE(std::find(unread.begin(), unread.end(), "model.layers.0.self_attn.q_proj.bias") !=
              unread.end());
}

}  // namespace
}  // namespace sgl::model
