// Hyper-parameter bounds and the context-length check.
#include "model/config_bounds.h"

#include <cmath>
#include <sstream>

namespace sgl::model {
namespace {

std::string number(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

Status int_in_range(const std::string& source, const std::string& name, int64_t value,
                    int64_t max) {
  if (value <= 0) {
    return invalid_argument(source + ": " + name + " must be positive, got " +
                            std::to_string(value));
  }
  if (value > max) {
    return invalid_argument(source + ": " + name + " is " + std::to_string(value) +
                            ", above the supported maximum " + std::to_string(max));
  }
  return Status::ok_status();
}

// A finite value in [min, max], or (min, max] / [min, max) / (min, max) as `open_min` and
// `open_max` say.
Status float_in_range(const std::string& source, const std::string& name, double value, double min,
                      double max, bool open_min, bool open_max) {
  const bool below = open_min ? value <= min : value < min;
  const bool above = open_max ? value >= max : value > max;
  if (!std::isfinite(value) || below || above) {
    return invalid_argument(source + ": " + name + " is " + number(value) + ", expected " +
                            number(min) + (open_min ? " < x " : " <= x ") +
                            (open_max ? "< " : "<= ") + number(max));
  }
  return Status::ok_status();
}

}  // namespace

Status check_config_bounds(const ModelConfig& c, const std::string& source,
                           const ConfigFieldNames& n) {
  using B = ConfigBounds;
  SGL_RETURN_IF_ERROR(int_in_range(source, n.vocab_size, c.vocab_size, B::kMaxVocabSize));
  SGL_RETURN_IF_ERROR(int_in_range(source, n.hidden_size, c.hidden_size, B::kMaxHiddenSize));
  SGL_RETURN_IF_ERROR(
      int_in_range(source, n.intermediate_size, c.intermediate_size, B::kMaxIntermediateSize));
  SGL_RETURN_IF_ERROR(
      int_in_range(source, n.num_hidden_layers, c.num_hidden_layers, B::kMaxNumLayers));
  SGL_RETURN_IF_ERROR(
      int_in_range(source, n.num_attention_heads, c.num_attention_heads, B::kMaxNumHeads));
  SGL_RETURN_IF_ERROR(
      int_in_range(source, n.num_key_value_heads, c.num_key_value_heads, c.num_attention_heads));
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    return invalid_argument(source + ": " + n.num_key_value_heads + " (" +
                            std::to_string(c.num_key_value_heads) + ") must divide " +
                            n.num_attention_heads + " (" + std::to_string(c.num_attention_heads) +
                            ")");
  }
  SGL_RETURN_IF_ERROR(int_in_range(source, n.head_dim, c.head_dim, B::kMaxHeadDim));
  if (c.head_dim % 2 != 0) {
    return invalid_argument(source + ": " + n.head_dim + " is " + std::to_string(c.head_dim) +
                            "; rotary embeddings need an even head dimension");
  }
  SGL_RETURN_IF_ERROR(int_in_range(source, n.max_position_embeddings, c.max_position_embeddings,
                                   B::kMaxContextLength));
  if (c.sliding_window != 0) {
    SGL_RETURN_IF_ERROR(
        int_in_range(source, n.sliding_window, c.sliding_window, B::kMaxContextLength));
  }
  SGL_RETURN_IF_ERROR(float_in_range(source, n.rms_norm_eps, c.rms_norm_eps, 0, B::kMaxRmsNormEps,
                                     /*open_min=*/true, /*open_max=*/true));
  SGL_RETURN_IF_ERROR(float_in_range(source, n.rope_theta, c.rope_theta, B::kMinRopeTheta,
                                     B::kMaxRopeTheta, false, false));
  if (c.num_experts != 0) {
    SGL_RETURN_IF_ERROR(int_in_range(source, n.num_experts, c.num_experts, B::kMaxNumExperts));
    SGL_RETURN_IF_ERROR(
        int_in_range(source, n.num_experts_per_tok, c.num_experts_per_tok, c.num_experts));
    SGL_RETURN_IF_ERROR(
        int_in_range(source, n.num_experts_per_tok, c.num_experts_per_tok, B::kMaxExpertsPerToken));
    SGL_RETURN_IF_ERROR(int_in_range(source, n.moe_intermediate_size, c.moe_intermediate_size,
                                     B::kMaxIntermediateSize));
    SGL_RETURN_IF_ERROR(
        int_in_range(source, n.decoder_sparse_step, c.decoder_sparse_step, B::kMaxNumLayers));
  }
  if (c.shared_expert_intermediate_size != 0) {
    SGL_RETURN_IF_ERROR(int_in_range(source, n.shared_expert_intermediate_size,
                                     c.shared_expert_intermediate_size, B::kMaxIntermediateSize));
  }
  const RopeScaling& s = c.rope_scaling;
  if (s.type == RopeScalingType::kLlama3) {
    const std::string& r = n.rope_scaling;
    SGL_RETURN_IF_ERROR(
        float_in_range(source, r + " factor", s.factor, 1, B::kMaxRopeScalingFactor, false, false));
    SGL_RETURN_IF_ERROR(float_in_range(source, r + " low_freq_factor", s.low_freq_factor, 0,
                                       B::kMaxRopeScalingFactor, true, false));
    SGL_RETURN_IF_ERROR(float_in_range(source, r + " high_freq_factor", s.high_freq_factor, 0,
                                       B::kMaxRopeScalingFactor, true, false));
    SGL_RETURN_IF_ERROR(int_in_range(source, r + " original_max_position_embeddings",
                                     s.original_max_position_embeddings, B::kMaxContextLength));
  }
  return Status::ok_status();
}

Status check_context_length(const ModelConfig& config, int64_t context_length,
                            const std::string& source) {
  if (context_length <= 0 || context_length > ConfigBounds::kMaxContextLength) {
    return invalid_argument(source + ": context length " + std::to_string(context_length) +
                            " is outside [1, " + std::to_string(ConfigBounds::kMaxContextLength) +
                            "]");
  }
  // NOTE: with the context inside the window no position ever falls out of it, so full
  // attention is exact; past it we would attend to tokens the model never sees.
  if (config.sliding_window > 0 && context_length > config.sliding_window) {
    const std::string window = std::to_string(config.sliding_window);
    return unimplemented(source + ": the model uses sliding-window attention (sliding_window " +
                         window + "), which is not implemented, and the context length " +
                         std::to_string(context_length) + " exceeds the window, so outputs past " +
                         window + " tokens would differ from the model's; pass --context-length " +
                         window + " (or less) to run it exactly");
  }
  return Status::ok_status();
}

}  // namespace sgl::model
