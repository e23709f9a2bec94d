// Sane bounds for model hyper-parameters, checked before anything is sized from them.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "model/model_config.h"

namespace sgl::model {

// Generous but finite: each is at least 4x the largest value of any released dense model we know
// of, so real models always pass, while a hostile or corrupt file cannot make us size tables
// from absurd numbers. The products stay far inside int64 (embedding: 2^22 * 2^16 = 2^38
// elements), so size arithmetic on checked configs cannot overflow; whether the result fits in
// memory is checked separately, at load (DecoderForCausalLM::plan).
struct ConfigBounds {
  // Token ids are int32. Largest released vocabularies: 256000 (Gemma), 262144 (Gemma 3).
  static constexpr int64_t kMaxVocabSize = int64_t{1} << 22;
  // Largest: 16384 (Llama 3.1 405B).
  static constexpr int64_t kMaxHiddenSize = int64_t{1} << 16;
  // Largest: 53248 (Llama 3.1 405B).
  static constexpr int64_t kMaxIntermediateSize = int64_t{1} << 20;
  // Largest: 126 (Llama 3.1 405B).
  static constexpr int64_t kMaxNumLayers = 1024;
  // Query heads; largest: 128.
  static constexpr int64_t kMaxNumHeads = 1024;
  // Largest: 256 (Gemma 2/3). Must also be even (RoPE rotates pairs).
  static constexpr int64_t kMaxHeadDim = 1024;
  // Largest advertised: 10M tokens (Llama 4 Scout). Positions and KV slot counts are int32.
  static constexpr int64_t kMaxContextLength = int64_t{1} << 24;
  // RoPE base: in use 1e4 .. 1e7 (Qwen2.5-1M). Below 1 the inverse frequencies exceed 1 and a
  // tiny base overflows them (a NaN table); the top keeps them well inside float range.
  static constexpr double kMinRopeTheta = 1.0;
  static constexpr double kMaxRopeTheta = 1e12;
  // RoPE scaling factors: llama3 `factor` in [1, max] (it divides frequencies; in use: 8, 32),
  // low/high frequency factors in (0, max].
  static constexpr double kMaxRopeScalingFactor = 1e4;
  // Routed experts of a MoE layer; largest released: 384 (Kimi K2). The CUDA router
  // (kernels::moe_route) takes up to 512.
  static constexpr int64_t kMaxNumExperts = 512;
  // Experts a token is routed to; released models use 1 to 10. The CUDA router keeps each pick
  // in one lane of a warp.
  static constexpr int64_t kMaxExpertsPerToken = 32;
  // A classification head's labels; released ones have 1 to a few hundred.
  static constexpr int64_t kMaxNumLabels = int64_t{1} << 16;
  // rms_norm_eps lies in (0, kMaxRmsNormEps); real models use 1e-6 .. 1e-5.
  static constexpr double kMaxRmsNormEps = 1.0;
};

// How the source of a config spells each hyper-parameter, for messages: config.json field names
// by default; model_config_from_gguf passes GGUF metadata keys.
struct ConfigFieldNames {
  std::string vocab_size = "field 'vocab_size'";
  std::string hidden_size = "field 'hidden_size'";
  std::string intermediate_size = "field 'intermediate_size'";
  std::string num_hidden_layers = "field 'num_hidden_layers'";
  std::string num_attention_heads = "field 'num_attention_heads'";
  std::string num_key_value_heads = "field 'num_key_value_heads'";
  std::string head_dim = "field 'head_dim'";
  std::string max_position_embeddings = "field 'max_position_embeddings'";
  std::string sliding_window = "field 'sliding_window'";
  std::string rms_norm_eps = "field 'rms_norm_eps'";
  std::string num_experts = "field 'num_experts'";
  std::string num_experts_per_tok = "field 'num_experts_per_tok'";
  std::string moe_intermediate_size = "field 'moe_intermediate_size'";
  std::string shared_expert_intermediate_size = "field 'shared_expert_intermediate_size'";
  std::string decoder_sparse_step = "field 'decoder_sparse_step'";
  std::string rope_theta = "field 'rope_theta'";
  std::string rope_scaling = "field 'rope_scaling'";
};

// Checks every hyper-parameter of a parsed config against ConfigBounds (and head_dim even,
// kv heads dividing heads, top-k at most the expert count). `source` names the file.
// InvalidArgument on the first violation.
Status check_config_bounds(const ModelConfig& config, const std::string& source,
                           const ConfigFieldNames& names = {});

// Checks the context length a server would run `config` with (its max_position_embeddings or
// --context-length): within ConfigBounds, and not past a sliding window we do not implement
// (attention past the window would silently differ from the model's), in which case the error
// suggests --context-length <window>.
Status check_context_length(const ModelConfig& config, int64_t context_length,
                            const std::string& source);

}  // namespace sgl::model
