// PEFT LoRA adapters: the config's checks and the per-layer A / B tensors.
#include "model/lora_adapter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "backend/stream.h"
#include "kernels/copy.h"
#include "model/mapped_file.h"
#include "model/safetensors.h"
#include "model/weight_source.h"

namespace sgl::model {
namespace {

using Json = nlohmann::json;

constexpr std::array<std::string_view, kNumLoraModules> kModuleNames = {
    "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
constexpr uint64_t kMaxConfigBytes = 1 << 20;

std::string_view module_block(LoraModule m) {
  return static_cast<int>(m) <= static_cast<int>(LoraModule::kO) ? "self_attn" : "mlp";
}

// A field that must be absent, null, false or empty for the math above to be the adapter's.
bool is_unset(const Json& o, const char* key) {
  const auto it = o.find(key);
  return it == o.end() || it->is_null() || (it->is_boolean() && !it->get<bool>()) ||
         ((it->is_array() || it->is_object() || it->is_string()) && it->empty());
}

}  // namespace

std::string_view lora_module_name(LoraModule m) { return kModuleNames[static_cast<int>(m)]; }

float LoraConfig::scaling() const {
  const double denom = use_rslora ? std::sqrt(static_cast<double>(r)) : static_cast<double>(r);
  return static_cast<float>(lora_alpha / denom);
}

Result<LoraConfig> parse_lora_config(const std::string& json_text, const std::string& source) {
  Json o;
  try {
    o = Json::parse(json_text);
  } catch (const Json::exception& e) {
    return invalid_argument(source + ": not JSON: " + e.what());
  }
  if (!o.is_object()) return invalid_argument(source + ": not a JSON object");
  auto bad = [&](const std::string& what) { return invalid_argument(source + ": " + what); };
  if (o.contains("peft_type") && o["peft_type"] != "LORA") {
    return bad("peft_type " + o["peft_type"].dump() + " is not LORA");
  }
  LoraConfig c;
  if (!o.contains("r") || !o["r"].is_number_integer() || o["r"].get<int64_t>() < 1 ||
      o["r"].get<int64_t>() > 4096) {
    return bad("r must be an integer in [1, 4096]");
  }
  c.r = o["r"].get<int64_t>();
  // PEFT's default alpha is 8.
  c.lora_alpha = 8;
  if (o.contains("lora_alpha") && !o["lora_alpha"].is_null()) {
    if (!o["lora_alpha"].is_number() || !std::isfinite(o["lora_alpha"].get<double>())) {
      return bad("lora_alpha must be a number");
    }
    c.lora_alpha = o["lora_alpha"].get<double>();
  }
  if (o.contains("use_rslora") && !o["use_rslora"].is_null()) {
    if (!o["use_rslora"].is_boolean()) return bad("use_rslora must be true or false");
    c.use_rslora = o["use_rslora"].get<bool>();
  }
  if (o.contains("bias") && o["bias"] != "none") {
    return bad("bias " + o["bias"].dump() + " is not supported (only \"none\": no trained biases)");
  }
  for (const char* key : {"use_dora", "fan_in_fan_out", "modules_to_save", "rank_pattern",
                          "alpha_pattern", "layers_to_transform", "layer_replication"}) {
    if (!is_unset(o, key)) return bad(std::string(key) + " is not supported");
  }
  const auto targets = o.find("target_modules");
  if (targets == o.end() || targets->is_null()) return bad("target_modules is missing");
  std::vector<std::string> names;
  if (targets->is_string()) {
    // PEFT's shorthand for every linear but the LM head; any other string is a regex.
    if (*targets != "all-linear") {
      return bad("target_modules " + targets->dump() +
                 " is a regular expression; list the modules instead");
    }
    c.targets.fill(true);
  } else if (targets->is_array()) {
    for (const Json& t : *targets) {
      if (!t.is_string()) return bad("target_modules must list module names");
      const auto it = std::find(kModuleNames.begin(), kModuleNames.end(), t.get<std::string>());
      if (it == kModuleNames.end()) {
        return bad("target module " + t.dump() +
                   " is not supported (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, "
                   "down_proj)");
      }
      c.targets[it - kModuleNames.begin()] = true;
    }
  } else {
    return bad("target_modules must be a list of module names");
  }
  if (std::none_of(c.targets.begin(), c.targets.end(), [](bool t) { return t; })) {
    return bad("target_modules is empty");
  }
  return c;
}

Result<LoraConfig> read_lora_config(const std::string& name, const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return not_found("LoRA adapter '" + name + "': " + dir.string() + " is not a directory");
  }
  const std::filesystem::path path = dir / "adapter_config.json";
  if (!std::filesystem::exists(path, ec)) {
    return not_found("LoRA adapter '" + name + "': " + dir.string() +
                     " has no adapter_config.json (not a PEFT LoRA adapter)");
  }
  SGL_ASSIGN_OR_RETURN(const std::string text, read_small_file(path, kMaxConfigBytes));
  return parse_lora_config(text, path.string());
}

Result<LoraAdapter> load_lora_adapter(const std::string& name, const std::filesystem::path& dir,
                                      const LoraConfig& config, const LoraModelShape& shape,
                                      Allocator& allocator) {
  LoraAdapter adapter;
  adapter.name = name;
  adapter.path = dir.string();
  adapter.config = config;
  std::error_code ec;
  const LoraConfig& c = adapter.config;
  const std::filesystem::path weights_path = dir / "adapter_model.safetensors";
  if (!std::filesystem::exists(weights_path, ec)) {
    return not_found(weights_path.string() +
                     " not found (adapters saved as PyTorch .bin files are not read: save with "
                     "safe_serialization=True)");
  }
  SGL_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(weights_path));
  // Every tensor must be one of ours: anything else (embedding LoRA, a trained LM head) would
  // change the model in a way this loader does not apply.
  std::map<std::string, const TensorInfo*> unread;
  for (const auto& [key, info] : file.tensors()) unread[key] = &info;
  adapter.layers.resize(static_cast<size_t>(shape.num_layers));
  // Each tensor is read as f32 on the host, then copied where the model runs.
  std::vector<float> staging;
  const backend::Stream stream{allocator.device(), nullptr};
  for (int64_t l = 0; l < shape.num_layers; ++l) {
    for (int m = 0; m < kNumLoraModules; ++m) {
      if (!c.targets[m]) continue;
      const auto module = static_cast<LoraModule>(m);
      const LoraModuleShape& s = shape.modules[m];
      const std::string prefix = "base_model.model.model.layers." + std::to_string(l) + "." +
                                 std::string(module_block(module)) + "." +
                                 std::string(lora_module_name(module)) + ".";
      LoraWeights& w = adapter.layers[l][m];
      for (const auto& [suffix, rows, cols, out] :
           {std::tuple{"lora_A.weight", c.r, s.in, &w.a}, {"lora_B.weight", s.out, c.r, &w.b}}) {
        const std::string key = prefix + suffix;
        const auto it = unread.find(key);
        if (it == unread.end()) {
          return not_found(weights_path.string() + ": tensor " + key + " is missing");
        }
        const TensorInfo& info = *it->second;
        if (info.shape != std::vector<int64_t>{rows, cols}) {
          return invalid_argument(weights_path.string() + ": tensor " + key + " has shape " +
                                  Json(info.shape).dump() + ", expected [" + std::to_string(rows) +
                                  ", " + std::to_string(cols) + "]");
        }
        staging.resize(static_cast<size_t>(rows * cols));
        SGL_RETURN_IF_ERROR(tensor_to_f32(info, staging.data()));
        *out = Buffer(allocator, DType::kF32, {rows, cols});
        kernels::copy(Tensor(staging.data(), DType::kF32, {rows, cols}), out->tensor(), stream);
        backend::synchronize(stream);  // staging is reused
        adapter.nbytes += rows * cols * 4;
        unread.erase(it);
      }
    }
  }
  if (!unread.empty()) {
    return invalid_argument(weights_path.string() + ": tensor " + unread.begin()->first +
                            " is not a LoRA weight of a targeted module (" +
                            std::to_string(unread.size()) + " such)");
  }
  return adapter;
}

}  // namespace sgl::model
