// libFuzzer target: the input is config.json text, parsed and validated, then taken through
// what a load derives from it before allocating: context check, RoPE frequencies, memory plan.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/config_bounds.h"
#include "model/model_config.h"
#include "model/model_registry.h"
#include "model/rope_cache.h"
#include "model/weight_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sgl::model;
  const std::string text(reinterpret_cast<const char*>(data), size);
  sgl::Result<ModelConfig> config = parse_model_config(text, "fuzz/config.json");
  if (!config.ok()) return 0;
  (void)check_context_length(*config, config->max_position_embeddings, "fuzz");
  // A parsed config must be inside the bounds everything downstream relies on.
  if (!check_config_bounds(*config, "fuzz").ok()) __builtin_trap();
  for (double f : rope_inv_freq(*config)) {
    if (!std::isfinite(f)) __builtin_trap();
  }
  (void)compute_rope_cos_sin(*config, std::min<int64_t>(config->max_position_embeddings, 4));
  // Dummy weights: sizes only, nothing allocated.
  WeightLoader loader(nullptr, sgl::cpu_allocator(), sgl::DType::kF32, sgl::backend::Stream{});
  (void)plan_model(*config, loader, ModelOptions{16, 4, 16});
  return 0;
}
