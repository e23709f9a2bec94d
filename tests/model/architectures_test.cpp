// The architecture table: its keys are unique, and config.json parsing (by architecture name and
// by model_type), the quirks and the registry all follow it.
#include "model/architectures.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "model/model_registry.h"
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
  std::set<std::string_view> names, model_types, gguf_names;
  for (const Architecture& a : architectures()) {
    SCOPED_TRACE(std::string(a.name));
    EXPECT_TRUE(names.insert(a.name).second);
    EXPECT_TRUE(model_types.insert(a.model_type).second);
    EXPECT_EQ(find_architecture(a.name), &a);
    EXPECT_EQ(find_architecture_by_model_type(a.model_type), &a);
    if (!a.gguf_name.empty()) {
      EXPECT_TRUE(gguf_names.insert(a.gguf_name).second);
      EXPECT_EQ(find_architecture_by_gguf_name(a.gguf_name), &a);
    }
  }
  EXPECT_EQ(find_architecture("FooForCausalLM"), nullptr);
  EXPECT_EQ(find_architecture_by_gguf_name(""), nullptr);
  EXPECT_EQ(supported_architecture_names(),
            "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
            "MixtralForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM");
  EXPECT_EQ(supported_gguf_names(), "llama, qwen2, qwen3");
}

// Each entry parses (or is refused, when unsupported) whether the config names it or only its
// model_type, with the quirks the table gives it; each supported one is created by the
// registry.
TEST(ArchitecturesTest, ConfigParsingAndRegistryFollowTheTable) {
  for (const Architecture& a : architectures()) {
    SCOPED_TRACE(std::string(a.name));
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

}  // namespace
}  // namespace sgl::model
