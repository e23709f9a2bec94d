// Tests for config.json parsing: the test models, both RoPE layouts, eos merging, errors.
#include "model/model_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "model_test_util.h"

namespace sgl::model {
namespace {

using Json = nlohmann::json;
using test_util::TempDir;
using test_util::testdata_models_dir;

ModelConfig load_ok(const std::string& model) {
  Result<ModelConfig> r = load_model_config(testdata_models_dir() / model);
  EXPECT_TRUE(r.ok()) << model << ": " << r.status().to_string();
  return r.ok() ? r.value() : ModelConfig{};
}

// A Llama-3.1-8B-shaped config in the classic layout (rope settings at top level).
Json llama3_config() {
  return Json::parse(R"({
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "vocab_size": 128256,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0,
    "rope_scaling": {
      "factor": 8.0,
      "low_freq_factor": 1.0,
      "high_freq_factor": 4.0,
      "original_max_position_embeddings": 8192,
      "rope_type": "llama3"
    },
    "tie_word_embeddings": false,
    "torch_dtype": "bfloat16",
    "bos_token_id": 128000,
    "eos_token_id": [128001, 128008, 128009]
  })");
}

Result<ModelConfig> parse(const Json& j) {
  return parse_model_config(j.dump(), "test/config.json");
}

void expect_error(const Result<ModelConfig>& r, StatusCode code,
                  const std::vector<std::string>& substrings) {
  test_util::expect_status(r.status(), code, substrings);
}

TEST(ModelConfigTest, Stories260K) {
  ModelConfig c = load_ok("stories260K");
  // NOTE: stories260K has no `architectures`; it is inferred from model_type.
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_EQ(c.model_type, "llama");
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 172);
  EXPECT_EQ(c.num_hidden_layers, 5);
  EXPECT_EQ(c.num_attention_heads, 8);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kNone);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.hidden_act, "silu");
  EXPECT_EQ(c.torch_dtype, "float32");  // written as `dtype` by transformers 5.x
  EXPECT_EQ(c.eos_token_ids, std::vector<int32_t>{2});
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(c.q_size(), 64);
  EXPECT_EQ(c.kv_size(), 32);
}

TEST(ModelConfigTest, TinyLlama) {
  ModelConfig c = load_ok("tiny-llama");
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_EQ(c.vocab_size, 1000);
  EXPECT_EQ(c.hidden_size, 128);
  EXPECT_EQ(c.num_hidden_layers, 2);
  EXPECT_EQ(c.num_attention_heads, 4);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_EQ(c.eos_token_ids, std::vector<int32_t>{2});
}

TEST(ModelConfigTest, TinyLlamaTied) {
  ModelConfig c = load_ok("tiny-llama-tied");
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.num_attention_heads, 4);
}

TEST(ModelConfigTest, TinyQwen2HasQkvBias) {
  ModelConfig c = load_ok("tiny-qwen2");
  EXPECT_EQ(c.architecture, "Qwen2ForCausalLM");
  EXPECT_EQ(c.model_type, "qwen2");
  // NOTE: the config has no attention_bias key; Qwen2 always has q/k/v biases.
  EXPECT_TRUE(c.attention_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.head_dim, 32);  // no head_dim key: hidden / heads
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
}

TEST(ModelConfigTest, TinyQwen3HasQkNormAndWideHeads) {
  ModelConfig c = load_ok("tiny-qwen3");
  EXPECT_EQ(c.architecture, "Qwen3ForCausalLM");
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.head_dim, 48);  // != hidden 128 / 4 heads
  EXPECT_EQ(c.q_size(), 192);
  EXPECT_EQ(c.kv_size(), 96);
}

// The MoE test models parse with their expert sizes; transformers 5.x wrote `num_local_experts`
// for tiny-qwen3-moe, where the released Qwen configs say `num_experts`.
TEST(ModelConfigTest, MoeModelsParseTheirExperts) {
  ModelConfig mixtral = load_ok("tiny-mixtral");
  EXPECT_EQ(mixtral.architecture, "MixtralForCausalLM");
  EXPECT_EQ(mixtral.num_experts, 8);
  EXPECT_EQ(mixtral.num_experts_per_tok, 2);
  EXPECT_EQ(mixtral.moe_intermediate_size, 256);  // Mixtral's experts are intermediate_size wide
  EXPECT_TRUE(mixtral.norm_topk_prob);            // Mixtral always renormalizes
  EXPECT_EQ(mixtral.shared_expert_intermediate_size, 0);
  EXPECT_TRUE(mixtral.is_sparse_layer(0) && mixtral.is_sparse_layer(1));

  ModelConfig qwen2 = load_ok("tiny-qwen2-moe");
  EXPECT_EQ(qwen2.architecture, "Qwen2MoeForCausalLM");
  EXPECT_TRUE(qwen2.attention_bias);
  EXPECT_EQ(qwen2.num_experts, 8);
  EXPECT_EQ(qwen2.num_experts_per_tok, 2);
  EXPECT_EQ(qwen2.moe_intermediate_size, 64);
  EXPECT_EQ(qwen2.shared_expert_intermediate_size, 128);
  EXPECT_FALSE(qwen2.norm_topk_prob);
  EXPECT_TRUE(qwen2.is_sparse_layer(0) && qwen2.is_sparse_layer(1));

  ModelConfig qwen3 = load_ok("tiny-qwen3-moe");
  EXPECT_EQ(qwen3.architecture, "Qwen3MoeForCausalLM");
  EXPECT_TRUE(qwen3.qk_norm);
  EXPECT_EQ(qwen3.num_experts, 8);  // from num_local_experts
  EXPECT_EQ(qwen3.moe_intermediate_size, 64);
  EXPECT_EQ(qwen3.shared_expert_intermediate_size, 0);
  EXPECT_TRUE(qwen3.norm_topk_prob);
}

// A Qwen3-30B-A3B-shaped config (the released layout: `num_experts`).
Json qwen3_moe_config() {
  Json j = llama3_config();
  j["architectures"] = {"Qwen3MoeForCausalLM"};
  j["model_type"] = "qwen3_moe";
  j.erase("rope_scaling");
  j["head_dim"] = 128;
  j["num_hidden_layers"] = 8;
  j["num_experts"] = 128;
  j["num_experts_per_tok"] = 8;
  j["moe_intermediate_size"] = 768;
  j["norm_topk_prob"] = true;
  j["decoder_sparse_step"] = 1;
  j["mlp_only_layers"] = Json::array();
  return j;
}

// transformers' rule: layer i is sparse iff i is not in mlp_only_layers and (i + 1) is a
// multiple of decoder_sparse_step.
TEST(ModelConfigTest, SparseLayersFollowStepAndMlpOnlyLayers) {
  Json j = qwen3_moe_config();
  j["decoder_sparse_step"] = 2;
  j["mlp_only_layers"] = {3, 4};
  Result<ModelConfig> r = parse(j);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::vector<int64_t> sparse;
  for (int64_t i = 0; i < r->num_hidden_layers; ++i) {
    if (r->is_sparse_layer(i)) sparse.push_back(i);
  }
  EXPECT_EQ(sparse, (std::vector<int64_t>{1, 5, 7}));
}

TEST(ModelConfigTest, BadMoeFieldsAreRefused) {
  Json j = qwen3_moe_config();
  j.erase("num_experts");
  expect_error(parse(j), StatusCode::kInvalidArgument,
               {"test/config.json", "num_experts", "num_local_experts"});
  j = qwen3_moe_config();
  j["num_local_experts"] = 64;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"num_experts", "(128)", "(64)"});
  j = qwen3_moe_config();
  j.erase("moe_intermediate_size");
  expect_error(parse(j), StatusCode::kInvalidArgument, {"moe_intermediate_size", "missing"});
  j = qwen3_moe_config();
  j["num_experts_per_tok"] = 129;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"num_experts_per_tok", "129", "128"});
  j = qwen3_moe_config();
  j["num_experts_per_tok"] = 33;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"num_experts_per_tok", "33", "32"});
  j = qwen3_moe_config();
  j["num_experts"] = 513;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"num_experts", "513", "maximum 512"});
  j = qwen3_moe_config();
  j["moe_intermediate_size"] = int64_t{1} << 30;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"moe_intermediate_size", "maximum"});
  j = qwen3_moe_config();
  j["decoder_sparse_step"] = 0;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"decoder_sparse_step", "positive"});
  j = qwen3_moe_config();
  j["mlp_only_layers"] = {8};
  expect_error(parse(j), StatusCode::kInvalidArgument, {"mlp_only_layers", "8"});
  j = qwen3_moe_config();
  j["mlp_only_layers"] = 3;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"mlp_only_layers", "list"});
  j = qwen3_moe_config();
  j["architectures"] = {"Qwen2MoeForCausalLM"};  // needs a shared expert width
  expect_error(parse(j), StatusCode::kInvalidArgument, {"shared_expert_intermediate_size"});
  j["shared_expert_intermediate_size"] = int64_t{1} << 30;
  expect_error(parse(j), StatusCode::kInvalidArgument,
               {"shared_expert_intermediate_size", "maximum"});
}

TEST(ModelConfigTest, TaskHeadLabelsFollowTransformers) {
  Json j = llama3_config();
  EXPECT_TRUE(parse(j)->labels.empty());  // a causal LM
  EXPECT_FALSE(parse(j)->has_task_head());
  EXPECT_EQ(parse(j)->pooled_size(), 4096);
  j["architectures"] = {"LlamaForSequenceClassification"};
  ModelConfig c = parse(j).value();  // neither id2label nor num_labels: transformers' two
  EXPECT_EQ(c.labels, (std::vector<std::string>{"LABEL_0", "LABEL_1"}));
  EXPECT_TRUE(c.has_task_head());
  EXPECT_EQ(c.pooled_size(), 2);
  EXPECT_EQ(c.model_type, "llama");
  j["num_labels"] = 3;
  EXPECT_EQ(parse(j)->labels, (std::vector<std::string>{"LABEL_0", "LABEL_1", "LABEL_2"}));
  // id2label names them in id order, whatever the keys' order; it wins over num_labels.
  j["id2label"] = {{"1", "good"}, {"0", "bad"}};
  EXPECT_EQ(parse(j)->labels, (std::vector<std::string>{"bad", "good"}));
  // A reward model scores once, labelled id2label's 0.
  j["architectures"] = {"Qwen2ForRewardModel"};
  j["model_type"] = "qwen2";
  EXPECT_EQ(parse(j)->labels, (std::vector<std::string>{"bad"}));
  j.erase("id2label");
  EXPECT_EQ(parse(j)->labels, (std::vector<std::string>{"LABEL_0"}));
  // Found by name only: a model_type never makes a classifier.
  j.erase("architectures");
  EXPECT_EQ(parse(j)->architecture, "Qwen2ForCausalLM");
  EXPECT_TRUE(parse(j)->labels.empty());

  j = llama3_config();
  j["architectures"] = {"Qwen3ForSequenceClassification"};
  j["model_type"] = "qwen3";
  for (const Json& bad : {Json::parse(R"({"0": "a", "2": "b"})"), Json::parse(R"({"x": "a"})"),
                          Json::parse(R"({"0": 1})"), Json::parse(R"(["a"])"), Json::parse(R"({})"),
                          Json::parse(R"({"-1": "a"})")}) {
    j["id2label"] = bad;
    expect_error(parse(j), StatusCode::kInvalidArgument, {"id2label"});
  }
  j.erase("id2label");
  j["num_labels"] = 0;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"num_labels"});
  j["num_labels"] = (int64_t{1} << 16) + 1;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"num_labels", "65536"});
}

TEST(ModelConfigTest, EveryTestModelParses) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(testdata_models_dir())) {
    if (!std::filesystem::exists(entry.path() / "config.json")) continue;
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    ++count;
    Result<ModelConfig> r = load_model_config(entry.path());
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_GT(r->head_dim, 0);
    EXPECT_EQ(r->num_attention_heads % r->num_key_value_heads, 0);
    EXPECT_FALSE(r->eos_token_ids.empty());
  }
  EXPECT_GE(count, 8);
}

// --json-model-override-args: fields replaced, the RoPE dicts merged key by key (as SGLang),
// rope_theta replaced where the transformers-5 layout keeps it too; bounds still checked.
TEST(ModelConfigTest, OverridesReplaceFieldsAndMergeRope) {
  const std::string text = llama3_config().dump();
  auto r = parse_model_config(text, "c.json",
                              R"({"rope_scaling": {"factor": 16.0}, "max_position_embeddings": 4096,
                                  "torch_dtype": "float32"})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->rope_scaling.type, RopeScalingType::kLlama3);
  EXPECT_DOUBLE_EQ(r->rope_scaling.factor, 16.0);
  EXPECT_DOUBLE_EQ(r->rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(r->max_position_embeddings, 4096);
  EXPECT_EQ(r->torch_dtype, "float32");
  Json v5 = llama3_config();
  v5.erase("rope_theta");
  v5.erase("rope_scaling");
  v5["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000.0}};
  auto theta = parse_model_config(v5.dump(), "c.json", R"({"rope_theta": 1000000.0})");
  ASSERT_TRUE(theta.ok()) << theta.status().to_string();
  EXPECT_DOUBLE_EQ(theta->rope_theta, 1000000.0);
  expect_error(parse_model_config(text, "c.json", "[1]"), StatusCode::kInvalidArgument,
               {"--json-model-override-args must be a JSON object"});
  expect_error(parse_model_config(text, "c.json", R"({"num_attention_heads": 7})"),
               StatusCode::kInvalidArgument, {"c.json (with --json-model-override-args)"});
}

TEST(ModelConfigTest, TopLevelRopeThetaAndLlama3Scaling) {
  Result<ModelConfig> r = parse(llama3_config());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const ModelConfig& c = *r;
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kLlama3);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 8.0);
  EXPECT_DOUBLE_EQ(c.rope_scaling.low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(c.rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_EQ(c.bos_token_id, 128000);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{128001, 128008, 128009}));
}

TEST(ModelConfigTest, Llama3ScalingInsideRopeParameters) {
  Json j = llama3_config();
  j.erase("rope_theta");
  j.erase("rope_scaling");
  j["rope_parameters"] = Json::parse(R"({"rope_theta": 500000.0, "rope_type": "llama3",
      "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 8192})");
  Result<ModelConfig> r = parse(j);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_DOUBLE_EQ(r->rope_theta, 500000.0);
  EXPECT_EQ(r->rope_scaling.type, RopeScalingType::kLlama3);
  EXPECT_DOUBLE_EQ(r->rope_scaling.factor, 32.0);
}

TEST(ModelConfigTest, OldStyleScalingTypeKeyAndNullScaling) {
  Json j = llama3_config();
  j["rope_scaling"].erase("rope_type");
  j["rope_scaling"]["type"] = "llama3";
  Result<ModelConfig> r = parse(j);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->rope_scaling.type, RopeScalingType::kLlama3);

  j["rope_scaling"] = nullptr;
  r = parse(j);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->rope_scaling.type, RopeScalingType::kNone);

  j.erase("rope_scaling");
  j.erase("rope_theta");
  r = parse(j);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_DOUBLE_EQ(r->rope_theta, 10000.0);  // the Llama default
}

TEST(ModelConfigTest, UnsupportedRopeTypeIsUnimplemented) {
  Json j = llama3_config();
  j["rope_scaling"] = Json::parse(R"({"rope_type": "yarn", "factor": 4.0})");
  expect_error(parse(j), StatusCode::kUnimplemented, {"test/config.json", "yarn"});
}

TEST(ModelConfigTest, Llama3ScalingMissingParameter) {
  Json j = llama3_config();
  j["rope_scaling"].erase("original_max_position_embeddings");
  expect_error(parse(j), StatusCode::kInvalidArgument,
               {"test/config.json", "rope_scaling.original_max_position_embeddings"});
  j = llama3_config();
  j["rope_scaling"].erase("factor");
  expect_error(parse(j), StatusCode::kInvalidArgument, {"rope_scaling.factor"});
  j = llama3_config();
  j["rope_scaling"]["high_freq_factor"] = 1.0;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"rope_scaling.high_freq_factor"});
}

TEST(ModelConfigTest, InfersArchitectureFromModelType) {
  Json j = llama3_config();
  j.erase("architectures");
  j["model_type"] = "qwen3";
  j["head_dim"] = 128;
  Result<ModelConfig> r = parse(j);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->architecture, "Qwen3ForCausalLM");
  EXPECT_TRUE(r->qk_norm);

  j["model_type"] = "qwen2";
  r = parse(j);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->architecture, "Qwen2ForCausalLM");
  EXPECT_TRUE(r->attention_bias);

  j["model_type"] = "mixtral";
  j["num_local_experts"] = 8;
  j["num_experts_per_tok"] = 2;
  r = parse(j);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->architecture, "MixtralForCausalLM");
  EXPECT_EQ(r->num_experts, 8);
  j["model_type"] = "gpt2";
  expect_error(parse(j), StatusCode::kUnimplemented, {"gpt2", "LlamaForCausalLM"});
}

TEST(ModelConfigTest, MistralSlidingWindow) {
  Json j = llama3_config();
  j["architectures"] = {"MistralForCausalLM"};
  j["model_type"] = "mistral";
  j.erase("rope_scaling");
  j["sliding_window"] = 4096;
  Result<ModelConfig> r = parse(j);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->architecture, "MistralForCausalLM");
  EXPECT_EQ(r->sliding_window, 4096);
  j["sliding_window"] = nullptr;  // transformers' None: no window
  r = parse(j);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->sliding_window, 0);
  j.erase("sliding_window");  // MistralConfig's default
  r = parse(j);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->sliding_window, 4096);
}

// Qwen's window applies as transformers applies it: only with use_sliding_window, and only on
// the layers layer_types (or else max_window_layers) marks; the window itself is refused at load
// unless the context fits it (model_load_safety_test).
TEST(ModelConfigTest, QwenSlidingWindowFollowsTransformers) {
  Json j = llama3_config();  // 32 layers
  j["architectures"] = {"Qwen2ForCausalLM"};
  j["model_type"] = "qwen2";
  j["sliding_window"] = 4096;
  j["use_sliding_window"] = false;
  j["max_window_layers"] = 0;
  EXPECT_EQ(parse(j)->sliding_window, 0);  // transformers ignores the window too
  j["use_sliding_window"] = true;
  EXPECT_EQ(parse(j)->sliding_window, 4096);
  j["max_window_layers"] = 32;  // no layer at or past it
  EXPECT_EQ(parse(j)->sliding_window, 0);
  j.erase("max_window_layers");  // transformers' default 28 < 32 layers
  EXPECT_EQ(parse(j)->sliding_window, 4096);
  j["layer_types"] = Json::array();
  for (int i = 0; i < 32; ++i) j["layer_types"].push_back("full_attention");
  EXPECT_EQ(parse(j)->sliding_window, 0);  // layer_types wins over max_window_layers
  j["layer_types"][31] = "sliding_attention";
  EXPECT_EQ(parse(j)->sliding_window, 4096);
  j["layer_types"][0] = "chunked_attention";
  expect_error(parse(j), StatusCode::kUnimplemented, {"layer_types", "chunked_attention"});
  j["model_type"] = "qwen3";
  j["architectures"] = {"Qwen3ForCausalLM"};
  j.erase("layer_types");
  j["use_sliding_window"] = false;
  EXPECT_EQ(parse(j)->sliding_window, 0);
}

// transformers' Llama attention never reads sliding_window.
TEST(ModelConfigTest, LlamaIgnoresSlidingWindow) {
  Json j = llama3_config();
  j["sliding_window"] = 4096;
  Result<ModelConfig> r = parse(j);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->sliding_window, 0);
}

TEST(ModelConfigTest, QkvBiasKeyAndNullHeadDim) {
  Json j = llama3_config();
  j["qkv_bias"] = true;
  j["head_dim"] = nullptr;
  Result<ModelConfig> r = parse(j);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->attention_bias);
  EXPECT_EQ(r->head_dim, 128);
}

// llama3_config() as `architecture`, with the expert keys the MoE families need.
Json config_of(const std::string& architecture) {
  Json j = llama3_config();
  j["architectures"] = {architecture};
  j.erase("model_type");
  j["head_dim"] = 128;
  j["num_experts"] = 8;
  j["num_experts_per_tok"] = 2;
  j["moe_intermediate_size"] = 768;
  j["shared_expert_intermediate_size"] = 512;
  return j;
}

// As SGLang's model classes read them: attention_bias biases q, k, v and o (Llama, Mistral,
// Qwen3, Qwen3-MoE, the EAGLE heads); Qwen2's q/k/v are biased regardless and its o never;
// Mixtral's attention has no biases. The qkv_bias key never biases o.
TEST(ModelConfigTest, AttentionBiasFlagsFollowTheArchitecture) {
  struct Case {
    const char* architecture;
    bool qkv_unset, qkv_set, o_set;  // attention_bias absent -> q/k/v; true -> q/k/v, o
  };
  for (const Case& c :
       {Case{"LlamaForCausalLM", false, true, true}, Case{"MistralForCausalLM", false, true, true},
        Case{"Qwen3ForCausalLM", false, true, true}, Case{"Qwen3MoeForCausalLM", false, true, true},
        Case{"LlamaForCausalLMEagle", false, true, true},
        Case{"Qwen2ForCausalLM", true, true, false},
        Case{"Qwen2MoeForCausalLM", true, true, false}}) {
    SCOPED_TRACE(c.architecture);
    Json j = config_of(c.architecture);
    Result<ModelConfig> r = parse(j);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->attention_bias, c.qkv_unset);
    EXPECT_FALSE(r->o_bias);
    j["attention_bias"] = true;
    r = parse(j);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->attention_bias, c.qkv_set);
    EXPECT_EQ(r->o_bias, c.o_set);
    j["attention_bias"] = false;
    j["qkv_bias"] = true;
    r = parse(j);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_TRUE(r->attention_bias);
    EXPECT_FALSE(r->o_bias);
  }
  Json j = config_of("MixtralForCausalLM");
  Result<ModelConfig> r = parse(j);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_FALSE(r->attention_bias || r->o_bias);
  j["attention_bias"] = false;
  EXPECT_TRUE(parse(j).ok());
  j["attention_bias"] = true;
  expect_error(parse(j), StatusCode::kInvalidArgument,
               {"test/config.json", "'attention_bias' is true", "MixtralForCausalLM", "no biases"});
  j.erase("attention_bias");
  j["qkv_bias"] = true;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"'qkv_bias' is true"});
}

// transformers' Llama MLP has biases with mlp_bias; ours has none, so the config is refused.
TEST(ModelConfigTest, MlpBiasIsRefused) {
  Json j = llama3_config();
  j["mlp_bias"] = false;
  EXPECT_TRUE(parse(j).ok());
  j["mlp_bias"] = true;
  expect_error(parse(j), StatusCode::kUnimplemented, {"test/config.json", "mlp_bias"});
}

// A quantized checkpoint is refused by its quant_method, not as a missing weight at load; FP8
// ones load (fp8_checkpoint_test has the rest).
TEST(ModelConfigTest, QuantizationConfigIsRefused) {
  Json j = llama3_config();
  j["quantization_config"] = nullptr;
  EXPECT_TRUE(parse(j).ok());
  EXPECT_FALSE(parse(j)->quantization.quantized());
  j["quantization_config"] = {{"quant_method", "fp8"}, {"weight_block_size", {128, 128}}};
  ASSERT_TRUE(parse(j).ok());
  EXPECT_EQ(parse(j)->quantization.block_size, (std::vector<int64_t>{128, 128}));
  for (const char* method : {"gptq", "awq", "bitsandbytes"}) {
    j["quantization_config"] = {{"quant_method", method}, {"bits", 4}};
    expect_error(parse(j), StatusCode::kUnimplemented,
                 {"test/config.json", "quantization_config", std::string("'") + method + "'"});
  }
  j["quantization_config"] = Json::object();
  expect_error(parse(j), StatusCode::kUnimplemented, {"quantization_config", "(none given)"});
}

// Keys a config leaves out take transformers' per-architecture defaults (its config classes);
// a null head_dim or sliding_window is the model code's None (hidden / heads; no window).
TEST(ModelConfigTest, AbsentKeysTakeTheArchitecturesDefaults) {
  auto parsed = [](const Json& j) {
    Result<ModelConfig> r = parse(j);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r : ModelConfig{};
  };
  Json mixtral = config_of("MixtralForCausalLM");
  mixtral.erase("rope_theta");
  mixtral.erase("rope_scaling");
  mixtral.erase("rms_norm_eps");
  EXPECT_DOUBLE_EQ(parsed(mixtral).rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(parsed(mixtral).rms_norm_eps, 1e-5);
  mixtral["rope_parameters"] = {{"rope_type", "default"}};  // transformers 5.x, no theta
  EXPECT_DOUBLE_EQ(parsed(mixtral).rope_theta, 1e6);
  EXPECT_EQ(parsed(mixtral).sliding_window, 0);  // MixtralConfig: None

  Json llama = config_of("LlamaForCausalLM");
  llama.erase("rope_theta");
  llama.erase("rms_norm_eps");
  EXPECT_DOUBLE_EQ(parsed(llama).rope_theta, 1e4);
  EXPECT_DOUBLE_EQ(parsed(llama).rms_norm_eps, 1e-6);

  Json qwen3 = config_of("Qwen3ForCausalLM");
  qwen3["hidden_size"] = 2048;  // 32 heads of 64
  qwen3.erase("head_dim");
  EXPECT_EQ(parsed(qwen3).head_dim, 128);  // Qwen3Config's, not hidden / heads
  qwen3["head_dim"] = nullptr;
  EXPECT_EQ(parsed(qwen3).head_dim, 64);
  Json qwen3_moe = config_of("Qwen3MoeForCausalLM");  // no head_dim default: hidden / heads
  qwen3_moe["hidden_size"] = 2048;
  qwen3_moe.erase("head_dim");
  EXPECT_EQ(parsed(qwen3_moe).head_dim, 64);

  for (const char* name :
       {"Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM"}) {
    SCOPED_TRACE(name);
    Json qwen = config_of(name);
    qwen["use_sliding_window"] = true;
    qwen["max_window_layers"] = 0;
    EXPECT_EQ(parsed(qwen).sliding_window, 4096);
    qwen["sliding_window"] = nullptr;
    EXPECT_EQ(parsed(qwen).sliding_window, 0);
  }
}

TEST(ModelConfigTest, KvHeadsDefaultToAttentionHeads) {
  Json j = llama3_config();
  j.erase("num_key_value_heads");
  Result<ModelConfig> r = parse(j);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->num_key_value_heads, 32);
}

TEST(ModelConfigTest, EosMergedFromGenerationConfig) {
  TempDir dir;
  Json j = llama3_config();
  j["eos_token_id"] = 128001;
  dir.write("config.json", j.dump());
  dir.write("generation_config.json", R"({"eos_token_id": [128001, 128009, 128009]})");
  Result<ModelConfig> r = load_model_config(dir.path());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->eos_token_ids, (std::vector<int32_t>{128001, 128009}));
}

TEST(ModelConfigTest, CorruptGenerationConfigNamesFile) {
  TempDir dir;
  dir.write("config.json", llama3_config().dump());
  dir.write("generation_config.json", R"({"eos_token_id": )");
  Result<ModelConfig> r = load_model_config(dir.path());
  expect_error(r, StatusCode::kInvalidArgument, {"generation_config.json"});
}

TEST(ModelConfigTest, MissingConfigJson) {
  TempDir dir;
  Result<ModelConfig> r = load_model_config(dir.path());
  expect_error(r, StatusCode::kNotFound, {(dir.path() / "config.json").string()});
}

TEST(ModelConfigTest, UnknownArchitecture) {
  Json j = llama3_config();
  j["architectures"] = {"FooForCausalLM"};
  expect_error(parse(j), StatusCode::kUnimplemented,
               {"test/config.json", "FooForCausalLM", "LlamaForCausalLM", "MistralForCausalLM",
                "Qwen2ForCausalLM", "Qwen3ForCausalLM", "MixtralForCausalLM", "Qwen2MoeForCausalLM",
                "Qwen3MoeForCausalLM"});
}

TEST(ModelConfigTest, MissingArchitectureAndModelType) {
  Json j = llama3_config();
  j.erase("architectures");
  j.erase("model_type");
  expect_error(parse(j), StatusCode::kInvalidArgument, {"test/config.json", "architectures"});
}

TEST(ModelConfigTest, MissingRequiredField) {
  for (const char* field : {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                            "num_attention_heads", "max_position_embeddings"}) {
    SCOPED_TRACE(field);
    Json j = llama3_config();
    j.erase(field);
    expect_error(parse(j), StatusCode::kInvalidArgument,
                 {"test/config.json", std::string("'") + field + "'", "missing"});
    j[field] = nullptr;  // null counts as missing
    expect_error(parse(j), StatusCode::kInvalidArgument, {field, "missing"});
  }
}

TEST(ModelConfigTest, NonPositiveOrWrongTypedField) {
  Json j = llama3_config();
  j["num_hidden_layers"] = 0;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"num_hidden_layers", "positive"});
  j = llama3_config();
  j["hidden_size"] = "4096";
  expect_error(parse(j), StatusCode::kInvalidArgument, {"hidden_size", "integer"});
  j = llama3_config();
  j["rms_norm_eps"] = -1.0;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"rms_norm_eps"});
  j = llama3_config();
  j["tie_word_embeddings"] = "yes";
  expect_error(parse(j), StatusCode::kInvalidArgument, {"tie_word_embeddings"});
  j = llama3_config();
  j["eos_token_id"] = Json::array({1, "x"});
  expect_error(parse(j), StatusCode::kInvalidArgument, {"eos_token_id"});
  j = llama3_config();
  j["head_dim"] = -8;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"head_dim"});
}

TEST(ModelConfigTest, HeadsNotDivisibleByKvHeads) {
  Json j = llama3_config();
  j["num_key_value_heads"] = 5;
  expect_error(parse(j), StatusCode::kInvalidArgument,
               {"test/config.json", "num_key_value_heads", "num_attention_heads"});
}

TEST(ModelConfigTest, HiddenNotDivisibleByHeadsWithoutHeadDim) {
  Json j = llama3_config();
  j["hidden_size"] = 4000;
  j["num_attention_heads"] = 24;
  j["num_key_value_heads"] = 8;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"hidden_size", "head_dim"});
  j["head_dim"] = 128;  // explicit head_dim makes it fine
  EXPECT_TRUE(parse(j).ok());
}

// Every hyper-parameter is bounded (config_bounds.h) at parse time, so nothing downstream sizes
// a table from an absurd value. Each of these used to parse, and loading it then aborted on
// std::bad_alloc or allocated gigabytes.
TEST(ModelConfigTest, AbsurdHyperParametersAreRefused) {
  struct Case {
    const char* field;
    Json value;
    std::vector<std::string> message;
  };
  const std::vector<Case> cases = {
      {"vocab_size", 1e9, {"'vocab_size' is 1000000000", "maximum 4194304"}},
      {"vocab_size", int64_t{1} << 31, {"'vocab_size' is 2147483648", "maximum"}},
      {"num_hidden_layers", int64_t{1} << 31, {"'num_hidden_layers' is 2147483648", "1024"}},
      {"hidden_size", int64_t{1} << 40, {"'hidden_size' is 1099511627776", "65536"}},
      {"max_position_embeddings", int64_t{1} << 31, {"'max_position_embeddings'", "16777216"}},
      {"intermediate_size", int64_t{1} << 34, {"'intermediate_size'", "maximum 1048576"}},
      {"num_attention_heads", 4096, {"'num_attention_heads' is 4096", "maximum 1024"}},
      {"head_dim", int64_t{1} << 20, {"'head_dim' is 1048576", "maximum 1024"}},
      {"head_dim", 127, {"'head_dim' is 127", "even"}},
      {"rope_theta", 1e300, {"'rope_theta'", "1e+300"}},
      {"rope_theta", 1e-300, {"'rope_theta' is 1e-300", "1 <= x <= 1e+12"}},
      {"rms_norm_eps", 2.0, {"'rms_norm_eps' is 2", "0 < x < 1"}},
      {"rms_norm_eps", 0.0, {"rms_norm_eps"}},
      {"vocab_size", -5, {"'vocab_size'", "positive, got -5"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.field) + " = " + c.value.dump());
    Json j = llama3_config();
    j[c.field] = c.value;
    std::vector<std::string> message = c.message;
    message.push_back("test/config.json");
    expect_error(parse(j), StatusCode::kInvalidArgument, message);
  }
  Json j = llama3_config();
  j["rope_scaling"]["factor"] = 1e9;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"rope_scaling", "factor"});
  j["rope_scaling"]["factor"] = 1e-9;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"rope_scaling", "factor is 1e-09"});
  j = llama3_config();
  j["rope_scaling"]["original_max_position_embeddings"] = int64_t{1} << 40;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"original_max_position_embeddings"});
  j = llama3_config();
  j["num_attention_heads"] = 0;
  expect_error(parse(j), StatusCode::kInvalidArgument, {"num_attention_heads", "positive"});
  // Values at the bounds still parse: the bounds are limits, not guesses.
  j = llama3_config();
  j["vocab_size"] = int64_t{1} << 22;
  j["hidden_size"] = 65536;
  j["num_attention_heads"] = 64;
  j["num_key_value_heads"] = 64;
  j["head_dim"] = 1024;
  j["num_hidden_layers"] = 1024;
  j["max_position_embeddings"] = int64_t{1} << 24;
  j["intermediate_size"] = int64_t{1} << 20;
  EXPECT_TRUE(parse(j).ok()) << parse(j).status().to_string();
}

// Walking a parsed value (its dump() in an error message) recurses: deep nesting is refused
// before parsing, never a stack overflow.
TEST(ModelConfigTest, DeepNestingIsAnErrorNotACrash) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  expect_error(
      parse_model_config(R"({"architectures": ["LlamaForCausalLM"], "vocab_size": )" + deep + "}",
                         "x/config.json"),
      StatusCode::kInvalidArgument, {"x/config.json", "nests deeper than 128"});
}

// Scaling values without a rope type are refused (transformers fails on them), not dropped.
TEST(ModelConfigTest, RopeScalingWithoutATypeIsAnError) {
  Json j = llama3_config();
  j["rope_scaling"] = {{"factor", 4.0}};
  expect_error(parse(j), StatusCode::kInvalidArgument,
               {"rope_scaling.rope_type", "is missing, but 'factor' is set"});
  j["rope_scaling"] = Json::object();
  EXPECT_TRUE(parse(j).ok()) << parse(j).status().to_string();
}

TEST(ModelConfigTest, MalformedJson) {
  expect_error(parse_model_config("{\"vocab_size\": ", "x/config.json"),
               StatusCode::kInvalidArgument, {"x/config.json", "JSON"});
  expect_error(parse_model_config("[1, 2]", "x/config.json"), StatusCode::kInvalidArgument,
               {"x/config.json"});
}

}  // namespace
}  // namespace sgl::model
