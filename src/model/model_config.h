// ModelConfig: the architecture hyper-parameters of a decoder-only model, from config.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/weight_quantization.h"

namespace sgl::model {

enum class RopeScalingType { kNone, kLlama3 };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  // llama3 parameters (see transformers' _compute_llama3_parameters).
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

// The sampling defaults a model's generation_config.json recommends (SGLang applies them to
// requests that leave the field out, with --sampling-defaults model); unset: not given.
struct GenerationDefaults {
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> top_k;
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
};

struct ModelConfig {
  std::string architecture;  // e.g. "LlamaForCausalLM"; inferred from model_type when absent
  std::string model_type;    // "llama", "mistral", "qwen2", "qwen3"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // defaults to num_attention_heads
  int64_t head_dim = 0;             // explicit, else hidden_size / num_attention_heads
  int64_t max_position_embeddings = 0;
  // Sliding-window attention span in tokens; 0 = full attention. Set only where transformers
  // applies it (Mistral's `sliding_window`; Qwen2/Qwen3 with `use_sliding_window` true and some
  // layer sliding; GGUF's <arch>.attention.sliding_window). Not implemented: a model with one
  // loads only with a context length within the window (check_context_length).
  int64_t sliding_window = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;  // top level or inside rope_parameters
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v projections carry a bias (Qwen2: always)
  bool o_bias = false;          // the o projection carries one (Llama's attention_bias: true)
  bool qk_norm = false;         // per-head RMSNorm on q and k (Qwen3)
  // Sparse mixture-of-experts (Mixtral, Qwen2-MoE, Qwen3-MoE); num_experts 0 = dense.
  int64_t num_experts = 0;                      // routed experts of a sparse layer
  int64_t num_experts_per_tok = 0;              // top-k
  int64_t moe_intermediate_size = 0;            // each expert's width (Mixtral: intermediate_size)
  int64_t shared_expert_intermediate_size = 0;  // 0 = no shared expert (Qwen2-MoE has one)
  bool norm_topk_prob = false;                  // renormalize the top-k weights (Mixtral: always)
  int64_t decoder_sparse_step = 1;              // every step-th layer is sparse ...
  std::vector<int64_t> mlp_only_layers;         // ... except these, which stay dense
  std::string hidden_act = "silu";
  std::string torch_dtype;  // "bfloat16", "float32", ... from `torch_dtype` or 5.x's `dtype`
  std::vector<int32_t> eos_token_ids;  // from config.json (and generation_config.json)
  int32_t bos_token_id = -1;
  GenerationDefaults generation_defaults;  // from generation_config.json
  WeightQuantization quantization;         // quantization_config: how the weights are stored
  // A task-head model's (Architecture::task_head) output labels in id order: config.json's
  // id2label, else LABEL_0 ... for num_labels (transformers' default 2); a reward model has one
  // output. Empty for a causal LM.
  std::vector<std::string> labels;

  // Derived sizes.
  int64_t q_size() const { return num_attention_heads * head_dim; }
  int64_t kv_size() const { return num_key_value_heads * head_dim; }
  // A classification or reward model (Architecture::task_head): served as an embedding model.
  bool has_task_head() const { return !labels.empty(); }
  // The values a pooling batch returns per request: a task head's outputs, else the hidden size.
  int64_t pooled_size() const {
    return labels.empty() ? hidden_size : static_cast<int64_t>(labels.size());
  }
  // Whether layer `layer` runs a sparse MoE block rather than a dense MLP (transformers'
  // Qwen2-MoE / Qwen3-MoE rule; Mixtral's configs make every layer sparse).
  bool is_sparse_layer(int64_t layer) const;
};

// The most bytes a config.json (or generation_config.json) may have: real ones are a few KB.
inline constexpr uint64_t kMaxConfigFileBytes = 16ull << 20;

// Parses `json_text` (the contents of config.json) and checks every hyper-parameter against
// ConfigBounds (config_bounds.h). `source` names the file in errors. `overrides`: a JSON object
// whose keys replace config.json's top-level ones (SGLang's --json-model-override-args); empty:
// none.
Result<ModelConfig> parse_model_config(const std::string& json_text, const std::string& source,
                                       std::string_view overrides = {});

// Reads <dir>/config.json (with `overrides`, as parse_model_config) and, when present, merges eos
// ids from generation_config.json. A path that is a GGUF file (by its magic) is read with
// load_gguf_model_config instead, and takes no overrides.
Result<ModelConfig> load_model_config(const std::filesystem::path& model_dir,
                                      std::string_view overrides = {});
// The error for overrides given with a GGUF model (it has no config.json to override).
Status gguf_config_overrides_error(const std::filesystem::path& path);
// Reads one config.json-style file (no generation_config.json next to it).
Result<ModelConfig> load_model_config_file(const std::filesystem::path& config_path,
                                           std::string_view overrides = {});

}  // namespace sgl::model
