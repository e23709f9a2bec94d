// read_kv_cache_scales.
#include "runner/kv_cache_scales.h"

#include <cmath>
#include <optional>
#include <string>

namespace sgl::runner {
namespace {

// The one value of the first of `names` the checkpoint has; nullopt when it has none.
Result<std::optional<float>> read_scalar(const model::WeightSource& weights,
                                         const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (!weights.has(name)) continue;
    SGL_ASSIGN_OR_RETURN(const std::vector<int64_t> shape, weights.shape(name));
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    if (numel != 1) {
      return invalid_argument("KV cache scale '" + name + "' holds " + std::to_string(numel) +
                              " values; one per layer is read");
    }
    float value = 0;
    SGL_RETURN_IF_ERROR(weights.read_f32(name, shape, &value));
    if (!std::isfinite(value) || value <= 0) {
      return invalid_argument("KV cache scale '" + name + "' is " + std::to_string(value) +
                              "; it must be positive and finite");
    }
    return std::optional<float>(value);
  }
  return std::optional<float>();
}

}  // namespace

Result<std::vector<attention::KvScales>> read_kv_cache_scales(const model::WeightSource& weights,
                                                              int64_t num_layers) {
  std::vector<attention::KvScales> scales;
  int64_t first_without = -1;
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    const std::string attn = "model.layers." + std::to_string(layer) + ".self_attn.";
    SGL_ASSIGN_OR_RETURN(std::optional<float> k,
                         read_scalar(weights, {attn + "k_scale", attn + "k_proj.k_scale"}));
    SGL_ASSIGN_OR_RETURN(std::optional<float> v,
                         read_scalar(weights, {attn + "v_scale", attn + "v_proj.v_scale"}));
    if (!k.has_value() && !v.has_value()) {  // one scale for both, or none
      SGL_ASSIGN_OR_RETURN(k, read_scalar(weights, {attn + "kv_scale"}));
      v = k;
    }
    if (k.has_value() != v.has_value()) {
      return invalid_argument("layer " + std::to_string(layer) + " of " + weights.describe() +
                              " has a KV cache scale for " + (k ? "K" : "V") + " only");
    }
    if (!k.has_value()) {
      if (first_without < 0) first_without = layer;
      continue;
    }
    scales.push_back({*k, *v});
  }
  if (scales.empty()) return scales;
  if (first_without >= 0) {
    return invalid_argument("layer " + std::to_string(first_without) + " of " + weights.describe() +
                            " has no KV cache scales (k_scale / v_scale) while other layers do");
  }
  return scales;
}

}  // namespace sgl::runner
