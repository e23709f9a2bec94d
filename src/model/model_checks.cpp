// Pre-allocation checks shared by the architectures.
#include "model/model_checks.h"

#include <charconv>
#include <cstdio>
#include <string>
#include <string_view>

#include "backend/backend.h"
#include "core/logging.h"
#include "model/config_bounds.h"

namespace sgl::model {
namespace {

std::string gib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  return text;
}

}  // namespace

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
      "the model needs " + gib(plan.total()) + " on " + device.to_string() + " (weights " +
      gib(plan.weights) + ", activations " + gib(plan.activations) + ", RoPE table " +
      gib(plan.rope_table) + " for " + std::to_string(max_positions) + " positions) but " +
      device.to_string() + " has " + gib(available) + (cpu ? " of memory" : " free") +
      (plan.rope_table * 4 > plan.total() ? "; a smaller --context-length shrinks the RoPE table"
                                          : ""));
}

}  // namespace sgl::model
