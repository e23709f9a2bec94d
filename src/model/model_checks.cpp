// Pre-allocation checks shared by the architectures.
#include "model/model_checks.h"

#include <charconv>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "backend/backend.h"
#include "core/byte_size.h"
#include "core/logging.h"
#include "model/config_bounds.h"

namespace sgl::model {

Status check_model_options(const ModelOptions& options) {
  if (options.max_positions < 0 || options.max_positions > ConfigBounds::kMaxContextLength ||
      options.max_num_tokens <= 0 || options.max_logit_rows <= 0) {
    return invalid_argument(
        "model options: max_positions " + std::to_string(options.max_positions) +
        ", max_num_tokens " + std::to_string(options.max_num_tokens) + ", max_logit_rows " +
        std::to_string(options.max_logit_rows) +
        " (positions 0 = the config's; the others positive; " + "positions at most " +
        std::to_string(ConfigBounds::kMaxContextLength) + ")");
  }
  return Status::ok_status();
}

Status check_no_extra_layers(const ModelConfig& config, const WeightSource& source,
                             const std::vector<std::string>& unread,
                             std::string_view layers_prefix) {
  for (const std::string& name : unread) {
    if (name.compare(0, layers_prefix.size(), layers_prefix) != 0) continue;
    int64_t layer = 0;
    const char* begin = name.data() + layers_prefix.size();
    const auto [end, ec] = std::from_chars(begin, name.data() + name.size(), layer);
    if (ec != std::errc() || end == begin || layer < config.num_hidden_layers) continue;
    return invalid_argument(source.describe() + ": weight '" + name + "' belongs to layer " +
                            std::to_string(layer) + ", but the config has num_hidden_layers " +
                            std::to_string(config.num_hidden_layers));
  }
  return Status::ok_status();
}

void warn_unread_tensors(const WeightSource& source, const std::vector<std::string>& unread) {
  constexpr size_t kNamed = 8;  // the rest are counted
  constexpr std::string_view kLegacyRope = "rotary_emb.inv_freq";
  std::string names;
  size_t count = 0;
  for (const std::string& name : unread) {
    if (name.ends_with(kLegacyRope)) continue;
    if (count++ < kNamed) names += (names.empty() ? "" : ", ") + name;
  }
  if (count == 0) return;
  if (count > kNamed) names += ", ... (" + std::to_string(count - kNamed) + " more)";
  SGL_LOG_WARN << source.describe() << ": " << count
               << " checkpoint tensor(s) are not used by the model (is the config's architecture "
                  "the checkpoint's?): "
               << names;
}

Status check_fits(Device device, const ModelMemoryPlan& plan, int64_t max_positions) {
  SGL_ASSIGN_OR_RETURN(backend::MemoryInfo mem, backend::memory_info(device));
  const bool cpu = device.is_cpu();
  const auto available = static_cast<int64_t>(cpu ? mem.total_bytes : mem.free_bytes);
  if (plan.total() <= available) return Status::ok_status();
  return resource_exhausted(
      "the model needs " + format_gib(plan.total()) + " on " + device.to_string() + " (weights " +
      format_gib(plan.weights) + ", activations " + format_gib(plan.activations) + ", RoPE table " +
      format_gib(plan.rope_table) + " for " + std::to_string(max_positions) + " positions) but " +
      device.to_string() + " has " + format_gib(available) + (cpu ? " of memory" : " free") +
      (plan.rope_table * 4 > plan.total() ? "; a smaller --context-length shrinks the RoPE table"
                                          : ""));
}

Status check_same_network(const ModelConfig& served, const ModelConfig& update,
                          const std::string& source) {
  auto differs = [&](std::string_view field, const auto& a, const auto& b) -> Status {
    if (a == b) return Status::ok_status();
    return invalid_argument(source + " describes another network than the one served: its " +
                            std::string(field) + " differs (a weight update keeps the network)");
  };
  const RopeScaling& r = served.rope_scaling;
  const RopeScaling& u = update.rope_scaling;
  const Status checks[] = {
      differs("architecture", served.architecture, update.architecture),
      differs("vocab_size", served.vocab_size, update.vocab_size),
      differs("hidden_size", served.hidden_size, update.hidden_size),
      differs("intermediate_size", served.intermediate_size, update.intermediate_size),
      differs("num_hidden_layers", served.num_hidden_layers, update.num_hidden_layers),
      differs("num_attention_heads", served.num_attention_heads, update.num_attention_heads),
      differs("num_key_value_heads", served.num_key_value_heads, update.num_key_value_heads),
      differs("head_dim", served.head_dim, update.head_dim),
      differs("max_position_embeddings", served.max_position_embeddings,
              update.max_position_embeddings),
      differs("sliding_window", served.sliding_window, update.sliding_window),
      differs("rms_norm_eps", served.rms_norm_eps, update.rms_norm_eps),
      differs("rope_theta", served.rope_theta, update.rope_theta),
      differs("rope_scaling",
              std::tie(r.type, r.factor, r.low_freq_factor, r.high_freq_factor,
                       r.original_max_position_embeddings),
              std::tie(u.type, u.factor, u.low_freq_factor, u.high_freq_factor,
                       u.original_max_position_embeddings)),
      differs("tie_word_embeddings", served.tie_word_embeddings, update.tie_word_embeddings),
      differs("attention_bias", std::pair(served.attention_bias, served.o_bias),
              std::pair(update.attention_bias, update.o_bias)),
      differs("qk_norm", served.qk_norm, update.qk_norm),
      differs("num_experts", served.num_experts, update.num_experts),
      differs("num_experts_per_tok", served.num_experts_per_tok, update.num_experts_per_tok),
      differs("moe_intermediate_size", served.moe_intermediate_size, update.moe_intermediate_size),
      differs("shared_expert_intermediate_size", served.shared_expert_intermediate_size,
              update.shared_expert_intermediate_size),
      differs("norm_topk_prob", served.norm_topk_prob, update.norm_topk_prob),
      differs("decoder_sparse_step", served.decoder_sparse_step, update.decoder_sparse_step),
      differs("mlp_only_layers", served.mlp_only_layers, update.mlp_only_layers),
      differs("hidden_act", served.hidden_act, update.hidden_act),
  };
  for (const Status& status : checks) SGL_RETURN_IF_ERROR(status);
  return Status::ok_status();
}

}  // namespace sgl::model
