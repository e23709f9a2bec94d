// GGUF metadata -> ModelConfig: architecture mapping, hyper-parameters, special tokens, checks.
#include "model/gguf_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "model/architectures.h"
#include "model/config_bounds.h"

namespace sgl::model {
namespace {

// Typed access to `<arch>.<key>` with errors naming the file and the full key.
class ArchKeys {
 public:
  ArchKeys(const GgufMetadata& meta, std::string arch, const std::string& file)
      : meta_(meta), arch_(std::move(arch)), file_(file) {}

  std::string key(std::string_view k) const { return arch_ + "." + std::string(k); }
  const std::string& file() const { return file_; }

  // The keys each ModelConfig field comes from, for check_config_bounds' messages.
  ConfigFieldNames field_names() const {
    auto named = [&](std::string_view k) { return "metadata key '" + key(k) + "'"; };
    ConfigFieldNames n;
    n.vocab_size = "the vocabulary size (rows of tensor 'token_embd.weight')";
    n.hidden_size = named("embedding_length");
    n.intermediate_size = named("feed_forward_length");
    n.num_hidden_layers = named("block_count");
    n.num_attention_heads = named("attention.head_count");
    n.num_key_value_heads = named("attention.head_count_kv");
    n.head_dim = meta_.has(key("attention.key_length"))
                     ? named("attention.key_length")
                     : "the head dimension (" + key("embedding_length") + " / " +
                           key("attention.head_count") + ")";
    n.max_position_embeddings = named("context_length");
    n.sliding_window = named("attention.sliding_window");
    n.rms_norm_eps = named("attention.layer_norm_rms_epsilon");
    n.rope_theta = named("rope.freq_base");
    n.rope_scaling = named("rope.scaling");
    n.num_experts = named("expert_count");
    n.num_experts_per_tok = named("expert_used_count");
    n.moe_intermediate_size = named("expert_feed_forward_length");
    n.shared_expert_intermediate_size = named("expert_shared_feed_forward_length");
    return n;
  }

  Result<int64_t> positive_int(std::string_view k, std::optional<int64_t> fallback) const {
    const std::string full = key(k);
    if (!meta_.has(full)) {
      if (fallback) return *fallback;
      return not_found(file_ + ": metadata key '" + full + "' is missing");
    }
    const GgufValue* v = meta_.find(full);
    if (v->is_array()) {
      return unimplemented(file_ + ": metadata key '" + full +
                           "' holds per-layer values; only one value for all layers is supported");
    }
    SGL_ASSIGN_OR_RETURN(int64_t n, meta_.get_int(full));
    if (n <= 0) {
      return data_loss(file_ + ": metadata key '" + full + "' must be positive, got " +
                       std::to_string(n));
    }
    return n;
  }

  Result<double> positive_number(std::string_view k, std::optional<double> fallback) const {
    const std::string full = key(k);
    if (!meta_.has(full)) {
      if (fallback) return *fallback;
      return not_found(file_ + ": metadata key '" + full + "' is missing");
    }
    SGL_ASSIGN_OR_RETURN(double x, meta_.get_float(full));
    if (!(x > 0.0) || !std::isfinite(x)) {
      return data_loss(file_ + ": metadata key '" + full + "' must be positive, got " +
                       std::to_string(x));
    }
    return x;
  }

 private:
  const GgufMetadata& meta_;
  std::string arch_;
  const std::string& file_;
};

Result<int32_t> token_id(const GgufMetadata& meta, const std::string& key,
                         const std::string& file) {
  SGL_ASSIGN_OR_RETURN(int64_t id, meta.get_int(key));
  if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
    return data_loss(file + ": metadata key '" + key + "' holds an out-of-range token id " +
                     std::to_string(id));
  }
  return static_cast<int32_t>(id);
}

// A MoE architecture's expert sizes, as llama.cpp writes them. Every layer is sparse: llama.cpp
// reads no decoder_sparse_step or mlp_only_layers.
Status read_moe(const GgufMetadata& meta, const ArchKeys& keys, const Architecture& arch,
                ModelConfig& c) {
  if (arch.moe == MoeStyle::kNone) return Status::ok_status();
  SGL_ASSIGN_OR_RETURN(c.num_experts, keys.positive_int("expert_count", {}));
  SGL_ASSIGN_OR_RETURN(c.num_experts_per_tok, keys.positive_int("expert_used_count", {}));
  if (arch.moe == MoeStyle::kMixtral) {
    c.moe_intermediate_size = c.intermediate_size;
    c.norm_topk_prob = true;
  } else {
    SGL_ASSIGN_OR_RETURN(c.moe_intermediate_size,
                         keys.positive_int("expert_feed_forward_length", {}));
    SGL_ASSIGN_OR_RETURN(c.norm_topk_prob, meta.get_bool_or(keys.key("expert_weights_norm"),
                                                            arch.gguf_norm_topk_prob));
  }
  if (arch.shared_expert) {
    SGL_ASSIGN_OR_RETURN(c.shared_expert_intermediate_size,
                         keys.positive_int("expert_shared_feed_forward_length", {}));
  }
  // llama.cpp's expert_gating_func: 1 softmax (the default), 2 sigmoid.
  SGL_ASSIGN_OR_RETURN(const int64_t gating, meta.get_int_or(keys.key("expert_gating_func"), 1));
  if (gating != 1) {
    return unimplemented(keys.file() + ": metadata key '" + keys.key("expert_gating_func") +
                         "' is " + std::to_string(gating) +
                         "; only softmax expert gating (1) is supported");
  }
  return Status::ok_status();
}

// RoPE scaling as llama.cpp reads it: an absent rope.scaling.type is linear, by the factor in
// rope.scaling.factor (the older rope.scale_linear only where that key is absent; 0 and 1 mean
// none), which only an explicit type "none" turns off. Only unscaled RoPE is supported.
Status check_rope_scaling(const GgufMetadata& meta, const ArchKeys& keys) {
  const std::string type_key = keys.key("rope.scaling.type");
  SGL_ASSIGN_OR_RETURN(const std::string type, meta.get_string_or(type_key, "linear"));
  if (type == "none") return Status::ok_status();
  if (type != "linear") {
    return unimplemented(keys.file() + ": metadata key '" + type_key + "' is '" + type +
                         "', which is not supported (supported: none, linear with factor 1)");
  }
  const char* k =
      meta.has(keys.key("rope.scaling.factor")) ? "rope.scaling.factor" : "rope.scale_linear";
  SGL_ASSIGN_OR_RETURN(const double factor, meta.get_float_or(keys.key(k), 0.0));
  if (factor != 0.0 && factor != 1.0) {
    return unimplemented(
        keys.file() + ": metadata key '" + keys.key(k) + "' is " + std::to_string(factor) +
        " (linear RoPE scaling" +
        (meta.has(type_key) ? "" : ", as llama.cpp reads a file without " + type_key) +
        "); scaled RoPE is not supported");
  }
  return Status::ok_status();
}

}  // namespace

Result<ModelConfig> model_config_from_gguf(const GgufFile& gguf) {
  const std::string& file = gguf.path();
  const GgufMetadata& meta = gguf.metadata();
  SGL_ASSIGN_OR_RETURN(std::string arch_name, meta.get_string("general.architecture"));
  SGL_ASSIGN_OR_RETURN(const int64_t experts, meta.get_int_or(arch_name + ".expert_count", 0));
  const Architecture* arch = find_architecture_by_gguf_name(arch_name, experts > 0);
  if (arch == nullptr || !arch->supported()) {
    const bool known = find_architecture_by_gguf_name(arch_name, experts <= 0) != nullptr;
    return unimplemented(
        file + ": GGUF architecture '" + arch_name + "'" +
        (known ? (experts > 0 ? " with experts" : " without experts (no expert_count)") : "") +
        " is not supported (supported: " + supported_gguf_names() + ")");
  }
  const ArchKeys keys(meta, arch_name, file);

  ModelConfig c;
  c.architecture = std::string(arch->name);
  c.model_type = std::string(arch->model_type);
  SGL_ASSIGN_OR_RETURN(c.max_position_embeddings, keys.positive_int("context_length", {}));
  SGL_ASSIGN_OR_RETURN(c.hidden_size, keys.positive_int("embedding_length", {}));
  SGL_ASSIGN_OR_RETURN(c.num_hidden_layers, keys.positive_int("block_count", {}));
  SGL_ASSIGN_OR_RETURN(c.intermediate_size, keys.positive_int("feed_forward_length", {}));
  SGL_ASSIGN_OR_RETURN(c.num_attention_heads, keys.positive_int("attention.head_count", {}));
  SGL_ASSIGN_OR_RETURN(c.num_key_value_heads,
                       keys.positive_int("attention.head_count_kv", c.num_attention_heads));
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    return data_loss(file + ": " + keys.key("attention.head_count_kv") + " (" +
                     std::to_string(c.num_key_value_heads) + ") must divide " +
                     keys.key("attention.head_count") + " (" +
                     std::to_string(c.num_attention_heads) + ")");
  }

  // head_dim: key_length when written (Qwen3 and any model whose head_dim != hidden / heads),
  // else hidden / heads as llama.cpp assumes.
  if (meta.has(keys.key("attention.key_length"))) {
    SGL_ASSIGN_OR_RETURN(c.head_dim, keys.positive_int("attention.key_length", {}));
  } else {
    if (c.hidden_size % c.num_attention_heads != 0) {
      return data_loss(file + ": " + keys.key("embedding_length") + " (" +
                       std::to_string(c.hidden_size) + ") is not divisible by " +
                       keys.key("attention.head_count") + " (" +
                       std::to_string(c.num_attention_heads) + ") and there is no " +
                       keys.key("attention.key_length"));
    }
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  SGL_ASSIGN_OR_RETURN(int64_t value_length,
                       keys.positive_int("attention.value_length", c.head_dim));
  if (value_length != c.head_dim) {
    return unimplemented(file + ": " + keys.key("attention.value_length") + " " +
                         std::to_string(value_length) + " differs from the key length " +
                         std::to_string(c.head_dim));
  }
  SGL_ASSIGN_OR_RETURN(int64_t rope_dims, keys.positive_int("rope.dimension_count", c.head_dim));
  if (rope_dims != c.head_dim) {
    return unimplemented(file + ": " + keys.key("rope.dimension_count") + " " +
                         std::to_string(rope_dims) + " != head_dim " + std::to_string(c.head_dim) +
                         " (partial rotary embeddings are not supported)");
  }
  SGL_ASSIGN_OR_RETURN(c.rope_theta, keys.positive_number("rope.freq_base", 10000.0));
  SGL_ASSIGN_OR_RETURN(c.rms_norm_eps,
                       keys.positive_number("attention.layer_norm_rms_epsilon", {}));

  SGL_RETURN_IF_ERROR(check_rope_scaling(meta, keys));
  // NOTE: Llama 3.x GGUFs carry their llama3 RoPE scaling as precomputed per-frequency divisors
  // in rope_freqs.weight; ignoring it would silently change long-context outputs.
  if (gguf.find_tensor("rope_freqs.weight") != nullptr) {
    return unimplemented(file +
                         ": RoPE frequency factors (tensor 'rope_freqs.weight', Llama 3 "
                         "rope scaling) are not supported yet");
  }

  // Vocabulary: the embedding's rows are what the model computes with.
  const GgufTensorInfo* embd = gguf.find_tensor("token_embd.weight");
  if (embd == nullptr) return not_found(file + ": tensor 'token_embd.weight' is missing");
  if (embd->shape.size() != 2 || embd->shape[1] != c.hidden_size) {
    std::string dims;
    for (size_t i = 0; i < embd->shape.size(); ++i) {
      dims += (i ? ", " : "") + std::to_string(embd->shape[i]);
    }
    return data_loss(file + ": tensor 'token_embd.weight' has shape [" + dims +
                     "], expected [vocab, " + std::to_string(c.hidden_size) + "]");
  }
  c.vocab_size = embd->shape[0];
  SGL_ASSIGN_OR_RETURN(int64_t declared_vocab, keys.positive_int("vocab_size", c.vocab_size));
  if (declared_vocab != c.vocab_size) {
    return data_loss(file + ": " + keys.key("vocab_size") + " " + std::to_string(declared_vocab) +
                     " != token_embd.weight rows " + std::to_string(c.vocab_size));
  }

  // llama.cpp writes the window for models whose attention uses one (0: none).
  const std::string window_key = keys.key("attention.sliding_window");
  SGL_ASSIGN_OR_RETURN(c.sliding_window, meta.get_int_or(window_key, 0));
  if (c.sliding_window < 0) {
    return data_loss(file + ": metadata key '" + window_key + "' must not be negative, got " +
                     std::to_string(c.sliding_window));
  }

  SGL_RETURN_IF_ERROR(read_moe(meta, keys, *arch, c));

  c.tie_word_embeddings = gguf.find_tensor("output.weight") == nullptr;
  // Biases as the file holds them (llama.cpp loads whichever are present).
  c.attention_bias = arch->qkv_bias || gguf.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.o_bias = gguf.find_tensor("blk.0.attn_output.bias") != nullptr;
  for (const char* name : {"blk.0.ffn_gate.bias", "blk.0.ffn_up.bias", "blk.0.ffn_down.bias"}) {
    if (gguf.find_tensor(name) != nullptr) {
      return unimplemented(file + ": tensor '" + name +
                           "': biases on the MLP projections are not supported");
    }
  }
  c.qk_norm = arch->qk_norm;
  c.hidden_act = "silu";
  c.torch_dtype = "float32";

  if (meta.has("tokenizer.ggml.bos_token_id")) {
    SGL_ASSIGN_OR_RETURN(c.bos_token_id, token_id(meta, "tokenizer.ggml.bos_token_id", file));
  }
  // End of generation: eos, and llama.cpp's end-of-turn / end-of-message ids when present.
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.eom_token_id"}) {
    if (!meta.has(key)) continue;
    SGL_ASSIGN_OR_RETURN(int32_t id, token_id(meta, key, file));
    if (std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), id) == c.eos_token_ids.end()) {
      c.eos_token_ids.push_back(id);
    }
  }
  SGL_RETURN_IF_ERROR(check_config_bounds(c, file, keys.field_names()));
  return c;
}

Result<ModelConfig> load_gguf_model_config(const std::filesystem::path& path) {
  SGL_ASSIGN_OR_RETURN(GgufFile file, GgufFile::open(path));
  return model_config_from_gguf(file);
}

}  // namespace sgl::model
