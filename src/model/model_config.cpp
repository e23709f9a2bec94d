// config.json parsing: architecture detection, both RoPE layouts, eos merging and validation.
#include "model/model_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <system_error>

#include "core/json_nesting.h"
#include "core/logging.h"
#include "model/architectures.h"
#include "model/config_bounds.h"
#include "model/gguf.h"
#include "model/gguf_config.h"
#include "model/mapped_file.h"

namespace sgl::model {
namespace {

using Json = nlohmann::json;

Result<Json> parse_json(const std::string& text, const std::string& source) {
  if (Status s = check_json_nesting(text); !s.ok())
    return invalid_argument(source + ": " + s.message());
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    return invalid_argument(source + ": malformed JSON: " + e.what());
  }
}

Result<std::string> read_text_file(const std::filesystem::path& path) {
  return read_small_file(path, kMaxConfigFileBytes);
}

void append_unique(std::vector<int32_t>& ids, int32_t id) {
  if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
}

// Typed access to the fields of one JSON object; errors name the file and the field.
// A key whose value is null counts as absent (transformers writes e.g. "head_dim": null).
class Fields {
 public:
  Fields(const Json& object, const std::string& source, std::string prefix = "")
      : object_(object), source_(source), prefix_(std::move(prefix)) {}

  bool has(const char* key) const {
    auto it = object_.find(key);
    return it != object_.end() && !it->is_null();
  }

  // Whether the key is left out entirely (a null value is there: transformers' None).
  bool absent(const char* key) const { return !object_.contains(key); }

  const Json* get(const char* key) const {
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }

  Status error(const char* key, const std::string& what) const {
    return invalid_argument(source_ + ": field '" + prefix_ + key + "' " + what);
  }

  Result<int64_t> required_positive_int(const char* key) const {
    if (!has(key)) return error(key, "is missing");
    return positive_int(key, 0);
  }

  // `fallback` when absent; otherwise the value, which must be a positive integer.
  Result<int64_t> positive_int(const char* key, int64_t fallback) const {
    const Json* v = get(key);
    if (v == nullptr) return fallback;
    SGL_ASSIGN_OR_RETURN(int64_t n, as_int(key, *v));
    if (n <= 0) return error(key, "must be positive, got " + std::to_string(n));
    return n;
  }

  Result<int64_t> non_negative_int(const char* key, int64_t fallback) const {
    const Json* v = get(key);
    if (v == nullptr) return fallback;
    SGL_ASSIGN_OR_RETURN(int64_t n, as_int(key, *v));
    if (n < 0) return error(key, "must not be negative, got " + std::to_string(n));
    return n;
  }

  Result<double> positive_number(const char* key, double fallback) const {
    const Json* v = get(key);
    if (v == nullptr) return fallback;
    if (!v->is_number()) return error(key, "must be a number, got " + v->dump());
    double x = v->get<double>();
    if (!(x > 0.0) || !std::isfinite(x)) return error(key, "must be positive, got " + v->dump());
    return x;
  }

  Result<bool> boolean(const char* key, bool fallback) const {
    const Json* v = get(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) return error(key, "must be true or false, got " + v->dump());
    return v->get<bool>();
  }

  Result<std::string> string(const char* key, const std::string& fallback) const {
    const Json* v = get(key);
    if (v == nullptr) return fallback;
    if (!v->is_string()) return error(key, "must be a string, got " + v->dump());
    return v->get<std::string>();
  }

  // A token id or a list of them (eos_token_id is either); absent or null gives an empty list.
  Result<std::vector<int32_t>> token_ids(const char* key) const {
    std::vector<int32_t> ids;
    const Json* v = get(key);
    if (v == nullptr) return ids;
    if (v->is_array()) {
      for (const Json& item : *v) {
        SGL_ASSIGN_OR_RETURN(int32_t id, token_id(key, item));
        ids.push_back(id);
      }
    } else {
      SGL_ASSIGN_OR_RETURN(int32_t id, token_id(key, *v));
      ids.push_back(id);
    }
    return ids;
  }

  Result<int32_t> token_id(const char* key, const Json& v) const {
    SGL_ASSIGN_OR_RETURN(int64_t n, as_int(key, v));
    if (n < 0 || n > std::numeric_limits<int32_t>::max()) {
      return error(key, "holds an out-of-range token id " + std::to_string(n));
    }
    return static_cast<int32_t>(n);
  }

  Result<int64_t> as_int(const char* key, const Json& v) const {
    if (v.is_number_unsigned()) {
      auto u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return error(key, "is too large: " + v.dump());
      }
      return static_cast<int64_t>(u);
    }
    if (v.is_number_integer()) return v.get<int64_t>();
    // NOTE: some hand-written configs say 4096.0; accept floats that are whole numbers.
    if (v.is_number_float()) {
      double x = v.get<double>();
      if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9.0e15) {
        return static_cast<int64_t>(x);
      }
    }
    return error(key, "must be an integer, got " + v.dump());
  }

 private:
  const Json& object_;
  const std::string& source_;
  std::string prefix_;
};

// Architecture from `architectures[0]`, else inferred from `model_type`.
Result<const Architecture*> resolve_architecture(const Fields& top, const std::string& source,
                                                 std::string* architecture) {
  const Json* archs = top.get("architectures");
  if (archs != nullptr) {
    if (!archs->is_array()) return top.error("architectures", "must be a list of strings");
    if (!archs->empty()) {
      const Json& first = archs->front();
      if (!first.is_string()) return top.error("architectures", "must be a list of strings");
      *architecture = first.get<std::string>();
    }
  }
  SGL_ASSIGN_OR_RETURN(std::string model_type, top.string("model_type", ""));
  if (architecture->empty()) {
    if (model_type.empty()) {
      return top.error("architectures", "is missing (and there is no model_type to infer it)");
    }
    const Architecture* arch = find_architecture_by_model_type(model_type);
    if (arch == nullptr) {
      return unimplemented(
          source + ": model_type '" + model_type +
          "' is not supported (supported architectures: " + supported_architecture_names() + ")");
    }
    *architecture = std::string(arch->name);
  }
  const Architecture* arch = find_architecture(*architecture);
  if (arch == nullptr || (!arch->supported() && arch->draft == DraftKind::kNone)) {
    return unimplemented(source + ": architecture '" + *architecture +
                         "' is not supported (supported: " + supported_architecture_names() + ")");
  }
  return arch;
}

// RoPE: `rope_theta` / `rope_scaling` at the top level (classic layout) or both inside
// `rope_parameters` (transformers 5.x). `default_theta`: the architecture's, for no rope_theta.
Status parse_rope(const Fields& top, const std::string& source, double default_theta,
                  ModelConfig& config) {
  const Json* params = top.get("rope_parameters");
  if (params != nullptr && !params->is_object()) {
    return top.error("rope_parameters", "must be an object, got " + params->dump());
  }
  const Json* scaling = top.get("rope_scaling");
  if (scaling != nullptr && !scaling->is_object()) {
    return top.error("rope_scaling", "must be an object or null, got " + scaling->dump());
  }

  if (params != nullptr && Fields(*params, source).has("rope_theta")) {
    Fields p(*params, source, "rope_parameters.");
    SGL_ASSIGN_OR_RETURN(config.rope_theta, p.positive_number("rope_theta", default_theta));
  } else {
    SGL_ASSIGN_OR_RETURN(config.rope_theta, top.positive_number("rope_theta", default_theta));
  }

  const Json* block = scaling != nullptr ? scaling : params;
  if (block == nullptr) return Status::ok_status();
  const std::string prefix = scaling != nullptr ? "rope_scaling." : "rope_parameters.";
  Fields s(*block, source, prefix);
  // Old configs say "type", newer ones "rope_type". Scaling values without either are an error
  // (transformers fails on them too), not a default RoPE that drops them.
  const char* type_key = s.has("rope_type") ? "rope_type" : "type";
  if (!s.has(type_key)) {
    for (const auto& [key, value] : block->items()) {
      if (key != "rope_theta" && key != "partial_rotary_factor" && !value.is_null()) {
        return s.error("rope_type", "is missing, but '" + key + "' is set");
      }
    }
  }
  SGL_ASSIGN_OR_RETURN(std::string type, s.string(type_key, "default"));
  if (type == "default") {
    config.rope_scaling = RopeScaling{};
    return Status::ok_status();
  }
  if (type != "llama3") {
    return unimplemented(source + ": " + prefix + type_key + " '" + type +
                         "' is not supported (supported: default, llama3)");
  }
  RopeScaling& rs = config.rope_scaling;
  rs.type = RopeScalingType::kLlama3;
  for (const char* key : {"factor", "low_freq_factor", "high_freq_factor"}) {
    if (!s.has(key)) return s.error(key, "is missing (required by rope type llama3)");
  }
  SGL_ASSIGN_OR_RETURN(rs.factor, s.positive_number("factor", 1.0));
  SGL_ASSIGN_OR_RETURN(rs.low_freq_factor, s.positive_number("low_freq_factor", 1.0));
  SGL_ASSIGN_OR_RETURN(rs.high_freq_factor, s.positive_number("high_freq_factor", 4.0));
  if (!s.has("original_max_position_embeddings")) {
    return s.error("original_max_position_embeddings", "is missing (required by rope type llama3)");
  }
  SGL_ASSIGN_OR_RETURN(rs.original_max_position_embeddings,
                       s.positive_int("original_max_position_embeddings", 0));
  // The llama3 formula divides by (high - low).
  if (!(rs.high_freq_factor > rs.low_freq_factor)) {
    return s.error("high_freq_factor", "must exceed low_freq_factor (" +
                                           std::to_string(rs.low_freq_factor) + "), got " +
                                           std::to_string(rs.high_freq_factor));
  }
  return Status::ok_status();
}

// Sliding-window attention as transformers applies it (the architecture's SlidingWindowRule):
// Mistral on every layer when `sliding_window` is set; Qwen2/Qwen3 only with
// `use_sliding_window` true, on the layers that `layer_types` marks (or, without it, those >=
// max_window_layers). LlamaForCausalLM ignores the key, as transformers' Llama does. The window
// is parsed here and refused at load (check_context_length) when it would change results.
// Where it applies, an absent key is the architecture's default window (transformers' config
// class: Mistral's and Qwen's 4096), a null one none.
Status parse_sliding_window(const Fields& top, const std::string& source, const Architecture& arch,
                            ModelConfig& config) {
  auto window = [&]() -> Result<int64_t> {
    if (top.absent("sliding_window")) return arch.default_sliding_window;
    return top.positive_int("sliding_window", 0);
  };
  if (arch.sliding_window == SlidingWindowRule::kAlways) {
    SGL_ASSIGN_OR_RETURN(config.sliding_window, window());
    return Status::ok_status();
  }
  if (arch.sliding_window != SlidingWindowRule::kWhenEnabled) return Status::ok_status();
  SGL_ASSIGN_OR_RETURN(bool use_sliding_window, top.boolean("use_sliding_window", false));
  if (!use_sliding_window) return Status::ok_status();
  bool any_sliding_layer = false;
  if (const Json* types = top.get("layer_types")) {
    if (!types->is_array()) return top.error("layer_types", "must be a list of strings");
    for (const Json& type : *types) {
      if (!type.is_string()) return top.error("layer_types", "must be a list of strings");
      const std::string name = type.get<std::string>();
      if (name == "sliding_attention") {
        any_sliding_layer = true;
      } else if (name != "full_attention") {
        return unimplemented(source + ": layer_types entry '" + name +
                             "' is not supported (supported: full_attention, sliding_attention)");
      }
    }
  } else {
    // transformers' default: 28.
    SGL_ASSIGN_OR_RETURN(int64_t max_window_layers, top.non_negative_int("max_window_layers", 28));
    any_sliding_layer = max_window_layers < config.num_hidden_layers;
  }
  if (any_sliding_layer) {
    SGL_ASSIGN_OR_RETURN(config.sliding_window, window());
  }
  return Status::ok_status();
}

// Mixture-of-experts sizes, as the architecture's MoeStyle reads them. The expert count is
// `num_experts` in Qwen's configs and `num_local_experts` in Mixtral's (transformers 5.x writes the
// latter for every family).
Status parse_moe(const Fields& top, const Architecture& arch, ModelConfig& config) {
  if (arch.moe == MoeStyle::kNone) return Status::ok_status();
  const bool local = top.has("num_local_experts"), plain = top.has("num_experts");
  if (!local && !plain) {
    return top.error("num_experts", "is missing (as is num_local_experts); " +
                                        std::string(arch.name) + " needs an expert count");
  }
  SGL_ASSIGN_OR_RETURN(const int64_t n_local, top.positive_int("num_local_experts", 0));
  SGL_ASSIGN_OR_RETURN(const int64_t n_plain, top.positive_int("num_experts", 0));
  if (local && plain && n_local != n_plain) {
    return top.error("num_experts", "(" + std::to_string(n_plain) +
                                        ") disagrees with num_local_experts (" +
                                        std::to_string(n_local) + ")");
  }
  config.num_experts = local ? n_local : n_plain;
  SGL_ASSIGN_OR_RETURN(config.num_experts_per_tok,
                       top.required_positive_int("num_experts_per_tok"));
  if (arch.moe == MoeStyle::kMixtral) {
    config.moe_intermediate_size = config.intermediate_size;
    config.norm_topk_prob = true;
    return Status::ok_status();
  }
  SGL_ASSIGN_OR_RETURN(config.moe_intermediate_size,
                       top.required_positive_int("moe_intermediate_size"));
  SGL_ASSIGN_OR_RETURN(config.norm_topk_prob, top.boolean("norm_topk_prob", false));
  SGL_ASSIGN_OR_RETURN(config.decoder_sparse_step, top.positive_int("decoder_sparse_step", 1));
  if (const Json* layers = top.get("mlp_only_layers")) {
    if (!layers->is_array()) return top.error("mlp_only_layers", "must be a list of layer indices");
    for (const Json& layer : *layers) {
      if (!layer.is_number_integer() || layer.get<int64_t>() < 0 ||
          layer.get<int64_t>() >= config.num_hidden_layers) {
        return top.error("mlp_only_layers", "holds " + layer.dump() +
                                                ", not a layer index below num_hidden_layers (" +
                                                std::to_string(config.num_hidden_layers) + ")");
      }
      config.mlp_only_layers.push_back(layer.get<int64_t>());
    }
  }
  if (arch.shared_expert) {
    SGL_ASSIGN_OR_RETURN(config.shared_expert_intermediate_size,
                         top.required_positive_int("shared_expert_intermediate_size"));
  }
  return Status::ok_status();
}

// A task-head model's labels (ModelConfig::labels), as transformers' PretrainedConfig reads
// them: id2label ({"0": "negative", ...}, ids 0..n-1) sets num_labels (over a num_labels that
// disagrees); without it num_labels (default 2) names them LABEL_i. A reward model scores with one
// output, labelled id2label's 0 or LABEL_0 (SGLang's Qwen2 / Qwen3 reward models ignore
// num_labels).
Status parse_labels(const Fields& top, const Architecture& arch, ModelConfig& config) {
  if (arch.task_head == TaskHead::kLmHead) return Status::ok_status();
  std::vector<std::string> named;
  if (const Json* id2label = top.get("id2label")) {
    if (!id2label->is_object() || id2label->empty() ||
        id2label->size() > static_cast<size_t>(ConfigBounds::kMaxNumLabels)) {
      return top.error("id2label", "must be an object of 1 to " +
                                       std::to_string(ConfigBounds::kMaxNumLabels) +
                                       " label names by id");
    }
    named.resize(id2label->size());
    std::vector<bool> seen(named.size(), false);
    for (const auto& [key, value] : id2label->items()) {
      size_t id = 0;
      const bool numeric = !key.empty() && key.size() <= 9 &&
                           key.find_first_not_of("0123456789") == std::string::npos;
      if (numeric) id = std::stoul(key);
      if (!numeric || id >= named.size() || seen[id] || !value.is_string()) {
        return top.error("id2label", "must map the ids 0 to " + std::to_string(named.size() - 1) +
                                         " to label names, got \"" + key + "\": " + value.dump());
      }
      seen[id] = true;
      named[id] = value.get<std::string>();
    }
  }
  SGL_ASSIGN_OR_RETURN(int64_t num_labels, top.positive_int("num_labels", 2));
  if (!named.empty() && num_labels != static_cast<int64_t>(named.size())) {
    if (top.has("num_labels")) {  // transformers warns too, and keeps id2label
      SGL_LOG_WARN << "num_labels " << num_labels << " disagrees with id2label's " << named.size()
                   << " labels; id2label is used";
    }
    num_labels = static_cast<int64_t>(named.size());
  }
  if (num_labels > ConfigBounds::kMaxNumLabels) {
    return top.error("num_labels", "(" + std::to_string(num_labels) + ") exceeds " +
                                       std::to_string(ConfigBounds::kMaxNumLabels));
  }
  const int64_t outputs = arch.task_head == TaskHead::kRewardModel ? 1 : num_labels;
  for (int64_t i = 0; i < outputs; ++i) {
    config.labels.push_back(named.empty() ? "LABEL_" + std::to_string(i)
                                          : named[static_cast<size_t>(i)]);
  }
  return Status::ok_status();
}

// One --json-model-override-args field into config.json's `root`. As SGLang: the RoPE dicts
// are merged key by key ({"rope_scaling": {"factor": 16}} keeps the rope_type); other fields are
// replaced whole. A field config.json also holds under another name (rope_theta inside
// rope_parameters, dtype / torch_dtype) is replaced there too, so that the override is the
// value read.
void apply_override(Json& root, const std::string& key, const Json& value) {
  if ((key == "rope_scaling" || key == "rope_parameters") && value.is_object() &&
      root.contains(key) && root[key].is_object()) {
    for (const auto& [k, v] : value.items()) root[key][k] = v;
    return;
  }
  root[key] = value;
  if (key == "rope_theta" && root.contains("rope_parameters") &&
      root["rope_parameters"].is_object()) {
    root["rope_parameters"]["rope_theta"] = value;
  }
  if (key == "dtype" && root.contains("torch_dtype")) root["torch_dtype"] = value;
  if (key == "torch_dtype" && root.contains("dtype")) root["dtype"] = value;
}

}  // namespace

bool ModelConfig::is_sparse_layer(int64_t layer) const {
  return num_experts > 0 && (layer + 1) % decoder_sparse_step == 0 &&
         std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) == mlp_only_layers.end();
}

Status gguf_config_overrides_error(const std::filesystem::path& path) {
  return invalid_argument("--json-model-override-args replaces config.json fields; " +
                          path.string() + " is a GGUF file, which has none");
}

Result<ModelConfig> parse_model_config(const std::string& json_text, const std::string& source_name,
                                       std::string_view overrides) {
  SGL_ASSIGN_OR_RETURN(Json root, parse_json(json_text, source_name));
  if (!root.is_object()) {
    return invalid_argument(source_name + ": top level must be a JSON object");
  }
  std::string source = source_name;
  if (!overrides.empty()) {
    constexpr const char* kFlag = "--json-model-override-args";
    SGL_ASSIGN_OR_RETURN(const Json replace, parse_json(std::string(overrides), kFlag));
    if (!replace.is_object())
      return invalid_argument(std::string(kFlag) + " must be a JSON object");
    for (const auto& [key, value] : replace.items()) apply_override(root, key, value);
    source += std::string(" (with ") + kFlag + ")";
  }
  Fields top(root, source);

  ModelConfig config;
  SGL_ASSIGN_OR_RETURN(const Architecture* arch,
                       resolve_architecture(top, source, &config.architecture));
  SGL_ASSIGN_OR_RETURN(config.model_type, top.string("model_type", ""));
  if (config.model_type.empty()) config.model_type = std::string(arch->model_type);
  // Quantized weights are refused here by their method, not later as a missing or misshapen
  // weight; FP8 ones load (model/fp8_weight_source.h).
  SGL_ASSIGN_OR_RETURN(config.quantization, parse_weight_quantization(root, source));

  SGL_ASSIGN_OR_RETURN(config.vocab_size, top.required_positive_int("vocab_size"));
  SGL_ASSIGN_OR_RETURN(config.hidden_size, top.required_positive_int("hidden_size"));
  SGL_ASSIGN_OR_RETURN(config.intermediate_size, top.required_positive_int("intermediate_size"));
  SGL_ASSIGN_OR_RETURN(config.num_hidden_layers, top.required_positive_int("num_hidden_layers"));
  SGL_ASSIGN_OR_RETURN(config.num_attention_heads,
                       top.required_positive_int("num_attention_heads"));
  SGL_ASSIGN_OR_RETURN(config.max_position_embeddings,
                       top.required_positive_int("max_position_embeddings"));
  SGL_ASSIGN_OR_RETURN(config.num_key_value_heads,
                       top.positive_int("num_key_value_heads", config.num_attention_heads));
  if (config.num_attention_heads % config.num_key_value_heads != 0) {
    return top.error("num_key_value_heads", "(" + std::to_string(config.num_key_value_heads) +
                                                ") must divide num_attention_heads (" +
                                                std::to_string(config.num_attention_heads) + ")");
  }
  if (top.has("head_dim")) {
    SGL_ASSIGN_OR_RETURN(config.head_dim, top.positive_int("head_dim", 0));
  } else if (arch->default_head_dim > 0 && top.absent("head_dim")) {
    config.head_dim = arch->default_head_dim;  // Qwen3Config's 128, not hidden / heads
  } else {
    if (config.hidden_size % config.num_attention_heads != 0) {
      return top.error("hidden_size", "(" + std::to_string(config.hidden_size) +
                                          ") is not divisible by num_attention_heads (" +
                                          std::to_string(config.num_attention_heads) +
                                          ") and there is no head_dim");
    }
    config.head_dim = config.hidden_size / config.num_attention_heads;
  }

  SGL_ASSIGN_OR_RETURN(config.rms_norm_eps,
                       top.positive_number("rms_norm_eps", arch->default_rms_norm_eps));
  SGL_RETURN_IF_ERROR(parse_rope(top, source, arch->default_rope_theta, config));
  SGL_RETURN_IF_ERROR(parse_sliding_window(top, source, *arch, config));
  SGL_RETURN_IF_ERROR(parse_moe(top, *arch, config));
  SGL_RETURN_IF_ERROR(parse_labels(top, *arch, config));

  SGL_ASSIGN_OR_RETURN(config.tie_word_embeddings, top.boolean("tie_word_embeddings", false));
  // `attention_bias` biases q/k/v and o where the architecture reads it (AttentionBiasKey);
  // `qkv_bias` (transformers 5.x, some families) only q/k/v; Qwen2 has those regardless.
  SGL_ASSIGN_OR_RETURN(bool attention_bias, top.boolean("attention_bias", false));
  SGL_ASSIGN_OR_RETURN(bool qkv_bias, top.boolean("qkv_bias", false));
  if ((attention_bias || qkv_bias) && arch->attention_bias_key == AttentionBiasKey::kRefused) {
    return top.error(attention_bias ? "attention_bias" : "qkv_bias",
                     "is true, but " + config.architecture + "'s attention has no biases");
  }
  config.o_bias = attention_bias && arch->attention_bias_key == AttentionBiasKey::kQkvAndO;
  config.attention_bias = config.o_bias || qkv_bias || arch->qkv_bias;
  config.qk_norm = arch->qk_norm;
  // transformers' Llama MLP takes biases with mlp_bias; DenseMlp has none.
  SGL_ASSIGN_OR_RETURN(bool mlp_bias, top.boolean("mlp_bias", false));
  if (mlp_bias) {
    return unimplemented(source +
                         ": mlp_bias true (biases on the MLP projections) is not supported");
  }

  SGL_ASSIGN_OR_RETURN(config.hidden_act, top.string("hidden_act", "silu"));
  // NOTE: transformers 5.x writes `dtype`; older versions `torch_dtype`.
  const char* dtype_key = top.has("torch_dtype") ? "torch_dtype" : "dtype";
  SGL_ASSIGN_OR_RETURN(config.torch_dtype, top.string(dtype_key, ""));

  SGL_ASSIGN_OR_RETURN(std::vector<int32_t> eos, top.token_ids("eos_token_id"));
  for (int32_t id : eos) append_unique(config.eos_token_ids, id);
  if (top.has("bos_token_id")) {
    SGL_ASSIGN_OR_RETURN(config.bos_token_id,
                         top.token_id("bos_token_id", *top.get("bos_token_id")));
  }
  SGL_RETURN_IF_ERROR(check_config_bounds(config, source));
  return config;
}

namespace {

// The sampling fields of generation_config.json. A value outside the range a request may set is
// left out with a warning: the recommendation is advice, and a bad one must not stop the model.
GenerationDefaults parse_generation_defaults(const Json& gen, const std::string& source) {
  GenerationDefaults d;
  auto number = [&](const char* key, double lo, double hi, bool open_lo) -> std::optional<double> {
    const auto it = gen.find(key);
    if (it == gen.end() || it->is_null()) return std::nullopt;
    const double x = it->is_number() ? it->get<double>() : std::nan("");
    if (std::isfinite(x) && x >= lo && !(open_lo && x == lo) && x <= hi) return x;
    SGL_LOG_WARN << source << ": '" << key << "' " << it->dump()
                 << " is outside the range a request may set; it is not used as a default";
    return std::nullopt;
  };
  d.temperature = number("temperature", 0, 1e6, false);
  d.top_p = number("top_p", 0, 1, true);
  d.min_p = number("min_p", 0, 1, false);
  d.repetition_penalty = number("repetition_penalty", 0, 2, true);
  if (std::optional<double> k = number("top_k", -1, 1e9, false)) {
    if (*k == std::floor(*k)) d.top_k = static_cast<int64_t>(*k);
  }
  return d;
}

}  // namespace

Result<ModelConfig> load_model_config_file(const std::filesystem::path& config_path,
                                           std::string_view overrides) {
  SGL_ASSIGN_OR_RETURN(std::string text, read_text_file(config_path));
  return parse_model_config(text, config_path.string(), overrides);
}

Result<ModelConfig> load_model_config(const std::filesystem::path& model_dir,
                                      std::string_view overrides) {
  if (is_gguf_file(model_dir)) {
    if (!overrides.empty()) return gguf_config_overrides_error(model_dir);
    return load_gguf_model_config(model_dir);
  }
  SGL_ASSIGN_OR_RETURN(ModelConfig config,
                       load_model_config_file(model_dir / "config.json", overrides));
  std::error_code ec;
  if (const std::filesystem::path quant_path = model_dir / "hf_quant_config.json";
      !config.quantization.quantized() && std::filesystem::exists(quant_path, ec)) {
    SGL_ASSIGN_OR_RETURN(std::string quant_text, read_text_file(quant_path));
    SGL_ASSIGN_OR_RETURN(Json quant, parse_json(quant_text, quant_path.string()));
    SGL_ASSIGN_OR_RETURN(config.quantization, parse_hf_quant_config(quant, quant_path.string()));
  }

  const std::filesystem::path gen_path = model_dir / "generation_config.json";
  if (!std::filesystem::exists(gen_path, ec)) return config;
  const std::string gen_source = gen_path.string();
  SGL_ASSIGN_OR_RETURN(std::string gen_text, read_text_file(gen_path));
  SGL_ASSIGN_OR_RETURN(Json gen, parse_json(gen_text, gen_source));
  if (!gen.is_object()) return invalid_argument(gen_source + ": top level must be a JSON object");
  Fields gen_fields(gen, gen_source);
  SGL_ASSIGN_OR_RETURN(std::vector<int32_t> gen_eos, gen_fields.token_ids("eos_token_id"));
  for (int32_t id : gen_eos) append_unique(config.eos_token_ids, id);
  if (config.bos_token_id < 0 && gen_fields.has("bos_token_id")) {
    SGL_ASSIGN_OR_RETURN(config.bos_token_id,
                         gen_fields.token_id("bos_token_id", *gen_fields.get("bos_token_id")));
  }
  config.generation_defaults = parse_generation_defaults(gen, gen_source);
  return config;
}

}  // namespace sgl::model
