// LoraAdapter: a PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors, as
// `peft`'s save_pretrained writes them) for a Llama-family model: for each layer and each
// targeted projection, A [r, in] and B [out, r], applied as y += scaling * (x A^T) B^T
// (model/layers/lora_batch.h). SGLang's --lora-paths loads them at start.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/allocator.h"
#include "core/buffer.h"
#include "core/status.h"

namespace sgl::model {

// The projections an adapter may target (PEFT's target_modules names; SGLang's
// SUPPORTED_LORA_TARGET_MODULES for a Llama-family model).
enum class LoraModule : uint8_t { kQ, kK, kV, kO, kGate, kUp, kDown };
inline constexpr int kNumLoraModules = 7;
std::string_view lora_module_name(LoraModule m);  // "q_proj", ...
// A set of modules, by LoraModule.
using LoraModules = std::array<bool, kNumLoraModules>;
inline constexpr LoraModules kAllLoraModules = {true, true, true, true, true, true, true};

// An adapter to load: SGLang's --lora-paths entry NAME=PATH (or PATH, named by itself), or its
// JSON form, whose `pinned` keeps the adapter from --max-loaded-loras' eviction.
struct LoraAdapterPath {
  std::string name;
  std::string path;
  bool pinned = false;
};

// Each projection's whole-model size: in and out features.
struct LoraModuleShape {
  int64_t in = 0;
  int64_t out = 0;
};
struct LoraModelShape {
  int64_t num_layers = 0;
  std::array<LoraModuleShape, kNumLoraModules> modules{};
};

// adapter_config.json's fields that decide the math; every other field that would change it
// (DoRA, biases, per-module ranks, extra trained modules, fan_in_fan_out) is refused by name.
struct LoraConfig {
  int64_t r = 0;
  double lora_alpha = 0;
  bool use_rslora = false;  // scaling alpha / sqrt(r) instead of alpha / r
  LoraModules targets{};
  float scaling() const;
};
Result<LoraConfig> parse_lora_config(const std::string& json_text, const std::string& source);

struct LoraWeights {
  Buffer a;  // f32 [r, in]; empty when the module is not targeted
  Buffer b;  // f32 [out, r]
};

struct LoraAdapter {
  std::string name;  // what requests name it by (SGLang's lora_name)
  std::string path;
  LoraConfig config;
  std::vector<std::array<LoraWeights, kNumLoraModules>> layers;  // [num_layers]
  int64_t nbytes = 0;
};

// Adapter `name`'s `dir`/adapter_config.json, parsed and checked.
Result<LoraConfig> read_lora_config(const std::string& name, const std::filesystem::path& dir);

// Loads the tensors of the adapter in `dir`, whose config read_lora_config gave, for a model of
// `shape` into `allocator`'s memory (f32). Errors name the file and tensor: one missing, of the
// wrong shape, or not one of the adapter's.
Result<LoraAdapter> load_lora_adapter(const std::string& name, const std::filesystem::path& dir,
                                      const LoraConfig& config, const LoraModelShape& shape,
                                      Allocator& allocator);

}  // namespace sgl::model
