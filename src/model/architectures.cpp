// The architecture table and its lookups.
#include "model/architectures.h"

#include <algorithm>
#include <array>
#include <vector>

#include "model/llama.h"
#include "model/mixtral.h"
#include "model/qwen2_moe.h"
#include "model/qwen3_moe.h"

namespace sgl::model {
namespace {

// The factory of a DecoderForCausalLM architecture.
template <class M>
constexpr ModelFactory kDecoder{&DecoderForCausalLM::load<M>, &DecoderForCausalLM::plan<M>};

constexpr Architecture kLlama = {.name = "LlamaForCausalLM",
                                 .model_type = "llama",
                                 .gguf_name = "llama",
                                 .factory = &kDecoder<LlamaForCausalLM>,
                                 .gguf_interleaved_qk = true};
constexpr Architecture kQwen2 = {.name = "Qwen2ForCausalLM",
                                 .model_type = "qwen2",
                                 .gguf_name = "qwen2",
                                 .factory = &kDecoder<LlamaForCausalLM>,
                                 .qkv_bias = true,
                                 .attention_bias_key = AttentionBiasKey::kIgnored,
                                 .sliding_window = SlidingWindowRule::kWhenEnabled,
                                 .default_sliding_window = 4096};
constexpr Architecture kQwen3 = {.name = "Qwen3ForCausalLM",
                                 .model_type = "qwen3",
                                 .gguf_name = "qwen3",
                                 .factory = &kDecoder<LlamaForCausalLM>,
                                 .qk_norm = true,
                                 .sliding_window = SlidingWindowRule::kWhenEnabled,
                                 .default_head_dim = 128,
                                 .default_sliding_window = 4096};

// A causal LM's decoder under a task head instead of the LM head: found by name only (its
// config says the LM's model_type), never read from GGUF.
constexpr Architecture with_task_head(Architecture lm, std::string_view name, TaskHead head) {
  lm.name = name;
  lm.model_type = "";
  lm.gguf_name = "";
  lm.task_head = head;
  return lm;
}

constexpr std::array<Architecture, 14> kArchitectures = {{
    kLlama,
    {.name = "MistralForCausalLM",
     .model_type = "mistral",
     .factory = &kDecoder<LlamaForCausalLM>,
     .sliding_window = SlidingWindowRule::kAlways,
     .default_sliding_window = 4096},
    kQwen2,
    kQwen3,
    {.name = "MixtralForCausalLM",
     .model_type = "mixtral",
     .gguf_name = "llama",  // llama.cpp writes Mixtral as llama with experts
     .factory = &kDecoder<MixtralForCausalLM>,
     .attention_bias_key = AttentionBiasKey::kRefused,
     .gguf_interleaved_qk = true,
     .sliding_window = SlidingWindowRule::kAlways,
     .default_rope_theta = 1e6,
     .default_rms_norm_eps = 1e-5,
     .moe = MoeStyle::kMixtral},
    {.name = "Qwen2MoeForCausalLM",
     .model_type = "qwen2_moe",
     .gguf_name = "qwen2moe",
     .factory = &kDecoder<Qwen2MoeForCausalLM>,
     .qkv_bias = true,
     .attention_bias_key = AttentionBiasKey::kIgnored,
     .sliding_window = SlidingWindowRule::kWhenEnabled,
     .default_sliding_window = 4096,
     .moe = MoeStyle::kQwen,
     .shared_expert = true},
    {.name = "Qwen3MoeForCausalLM",
     .model_type = "qwen3_moe",
     .gguf_name = "qwen3moe",
     .factory = &kDecoder<Qwen3MoeForCausalLM>,
     .qk_norm = true,
     .sliding_window = SlidingWindowRule::kWhenEnabled,
     .default_sliding_window = 4096,
     .moe = MoeStyle::kQwen,
     .gguf_norm_topk_prob = true},
    // Classification and reward models (SGLang's LlamaForSequenceClassification, ...).
    with_task_head(kLlama, "LlamaForSequenceClassification", TaskHead::kSequenceClassification),
    with_task_head(kQwen2, "Qwen2ForSequenceClassification", TaskHead::kSequenceClassification),
    with_task_head(kQwen3, "Qwen3ForSequenceClassification", TaskHead::kSequenceClassification),
    with_task_head(kQwen2, "Qwen2ForRewardModel", TaskHead::kRewardModel),
    with_task_head(kQwen3, "Qwen3ForRewardModel", TaskHead::kRewardModel),
    // Draft heads, found by name only (their configs say model_type "llama"): config parsing
    // reads them, the registry refuses to serve them alone.
    {.name = "LlamaForCausalLMEagle", .model_type = "", .draft = DraftKind::kEagle},
    {.name = "LlamaForCausalLMEagle3", .model_type = "", .draft = DraftKind::kEagle3},
}};

template <class Key>
const Architecture* find_by(std::string_view value, Key key) {
  if (value.empty()) return nullptr;
  for (const Architecture& a : kArchitectures) {
    if (a.*key == value) return &a;
  }
  return nullptr;
}

}  // namespace

std::span<const Architecture> architectures() { return kArchitectures; }

const Architecture* find_architecture(std::string_view name) {
  return find_by(name, &Architecture::name);
}

const Architecture* find_architecture_by_model_type(std::string_view model_type) {
  return find_by(model_type, &Architecture::model_type);
}

const Architecture* find_architecture_by_gguf_name(std::string_view gguf_name, bool experts) {
  if (gguf_name.empty()) return nullptr;
  for (const Architecture& a : kArchitectures) {
    if (a.gguf_name == gguf_name && (a.moe != MoeStyle::kNone) == experts) return &a;
  }
  return nullptr;
}

std::string supported_architecture_names() {
  std::string out;
  for (const Architecture& a : kArchitectures) {
    if (!a.supported()) continue;
    if (!out.empty()) out += ", ";
    out += a.name;
  }
  return out;
}

std::string supported_gguf_names() {
  std::string out;
  std::vector<std::string_view> seen;  // "llama" names Llama and Mixtral
  for (const Architecture& a : kArchitectures) {
    if (!a.supported() || a.gguf_name.empty()) continue;
    if (std::find(seen.begin(), seen.end(), a.gguf_name) != seen.end()) continue;
    seen.push_back(a.gguf_name);
    if (!out.empty()) out += ", ";
    out += a.gguf_name;
  }
  return out;
}

}  // namespace sgl::model
