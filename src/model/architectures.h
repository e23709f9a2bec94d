// The architecture table: every model architecture we know, read by config.json parsing, the
// GGUF config reader, the GGUF weight source and the model registry.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/allocator.h"
#include "core/status.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/weight_loader.h"

namespace sgl::model {

// How the registry makes an architecture's model (DecoderForCausalLM::load / plan state the
// contract every architecture keeps).
struct ModelFactory {
  // Checks `weights` against the config, allocates on `allocator` and loads.
  Result<std::unique_ptr<Model>> (*load)(const ModelConfig& config, WeightLoader& weights,
                                         Allocator& allocator, const ModelOptions& options);
  // The checking half of load: every tensor checked, nothing read or allocated; returns what
  // load would allocate.
  Result<ModelMemoryPlan> (*plan)(const ModelConfig& config, WeightLoader& weights,
                                  const ModelOptions& options);
};

// Which layers use the config's sliding window, as transformers decides it.
enum class SlidingWindowRule {
  kIgnored,      // the architecture has none (transformers' Llama ignores the key)
  kAlways,       // every layer, whenever `sliding_window` is set (Mistral)
  kWhenEnabled,  // only with `use_sliding_window`, on the layers `layer_types` (else
                 // `max_window_layers`) marks (Qwen2, Qwen3)
};

// What config.json's `attention_bias` does to the attention projections, as SGLang's model
// class reads it.
enum class AttentionBiasKey : uint8_t {
  kQkvAndO,  // true biases q, k, v and o (Llama, Mistral, Qwen3, Qwen3-MoE)
  kIgnored,  // never read: q/k/v biased by qkv_bias (or the `qkv_bias` key), o never (Qwen2)
  kRefused,  // the attention has no biases (Mixtral): true is an error, not ignored weights
};

// How config parsing, the GGUF config reader and GgufWeightSource read an architecture's
// mixture-of-experts keys and tensor names (the model class builds the blocks from them).
enum class MoeStyle : uint8_t {
  kNone,  // dense MLPs only
  // `num_local_experts` experts of width intermediate_size under
  // block_sparse_moe.{gate, experts.E.w1|w3|w2}; top-k weights always renormalized.
  kMixtral,
  // Experts of width moe_intermediate_size under mlp.{gate, experts.E.{gate,up,down}_proj},
  // sparse where decoder_sparse_step and mlp_only_layers say; top-k weights renormalized iff
  // norm_topk_prob.
  kQwen,
};

// An EAGLE draft head's layout (model/eagle_draft_model.h): not a model to serve on its own.
enum class DraftKind : uint8_t {
  kNone,
  kEagle,   // SGLang's LlamaForCausalLMEagle (EAGLE-1 / EAGLE-2 heads)
  kEagle3,  // SGLang's LlamaForCausalLMEagle3
};

// What the decoder's final hidden states feed (SGLang's model class). A task head scores each
// request's last token (SGLang's LAST pooling, not normalised): such a model serves only pooling
// batches, as an embedding model does, whatever --is-embedding says.
enum class TaskHead : uint8_t {
  kLmHead,  // a causal LM
  // `score`: one linear layer [num_labels, hidden] (+ a bias where the checkpoint has one):
  // transformers' *ForSequenceClassification.
  kSequenceClassification,
  // Qwen2ForRewardModel's and Qwen3ForRewardModel's `score`: Linear(hidden, hidden) + bias, ReLU,
  // Linear(hidden, 1) + bias.
  kRewardModel,
};

struct Architecture {
  std::string_view name;        // config.json `architectures[0]`: "Qwen2ForCausalLM"
  std::string_view model_type;  // config.json `model_type`: "qwen2"
  // GGUF `general.architecture`; empty: not read from GGUF. With `moe`, the file must declare
  // `<gguf_name>.expert_count` (llama.cpp's "llama" is Llama without it, Mixtral with it).
  std::string_view gguf_name = {};
  // The model class (llama.h, mixtral.h, ...); null: recognised (errors name it), not supported.
  const ModelFactory* factory = nullptr;
  // Quirks: what the architecture implies and its config does not say.
  bool qkv_bias = false;  // q/k/v projections carry a bias whatever the config says (Qwen2)
  AttentionBiasKey attention_bias_key = AttentionBiasKey::kQkvAndO;
  bool qk_norm = false;  // per-head RMSNorm on q and k (Qwen3)
  // llama.cpp's converter stored the q/k projection rows interleaved for RoPE (its Llama
  // converter does; GgufWeightSource undoes it).
  bool gguf_interleaved_qk = false;
  SlidingWindowRule sliding_window = SlidingWindowRule::kIgnored;
  // transformers' config-class defaults for keys config.json leaves out (a null value is not
  // "left out" for head_dim and sliding_window: the model code's own fallback applies).
  double default_rope_theta = 10000.0;
  double default_rms_norm_eps = 1e-6;
  int64_t default_head_dim = 0;        // 0: hidden_size / num_attention_heads
  int64_t default_sliding_window = 0;  // the window when a used `sliding_window` is absent
  MoeStyle moe = MoeStyle::kNone;
  // The config declares a shared expert's width, shared_expert_intermediate_size (Qwen2-MoE).
  bool shared_expert = false;
  // llama.cpp renormalizes the top-k weights of this architecture's GGUF files unless their
  // `<arch>.expert_weights_norm` says otherwise (Qwen3-MoE: yes; Qwen2-MoE: no; Mixtral: always).
  bool gguf_norm_topk_prob = false;
  DraftKind draft = DraftKind::kNone;
  TaskHead task_head = TaskHead::kLmHead;

  bool supported() const { return factory != nullptr; }
};

// Every architecture, supported ones first, in the order error messages list them.
std::span<const Architecture> architectures();

// The entry with that config.json architecture name, model_type or GGUF general.architecture;
// nullptr when none has it.
const Architecture* find_architecture(std::string_view name);
const Architecture* find_architecture_by_model_type(std::string_view model_type);
// By GGUF general.architecture and whether the file declares experts (`<name>.expert_count`).
const Architecture* find_architecture_by_gguf_name(std::string_view gguf_name,
                                                   bool experts = false);

// "LlamaForCausalLM, MistralForCausalLM, ...": the supported architectures, for errors.
std::string supported_architecture_names();
// "llama, qwen2, qwen3": the GGUF architectures of the supported ones, for errors.
std::string supported_gguf_names();

}  // namespace sgl::model
