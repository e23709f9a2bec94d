// --lora-paths: the three spellings SGLang's LoRAPathAction reads.
#include "app/lora_flags.h"

#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace sgl::app {
namespace {

using Json = nlohmann::json;

Result<model::LoraAdapterPath> parse_one(const std::string& value) {
  if (value.starts_with("{")) {
    Json o;
    try {
      o = Json::parse(value);
    } catch (const Json::exception&) {
      return invalid_argument("--lora-paths: '" + value + "' is not a JSON object");
    }
    if (!o.is_object() || !o.contains("lora_name") || !o["lora_name"].is_string() ||
        !o.contains("lora_path") || !o["lora_path"].is_string()) {
      return invalid_argument("--lora-paths: '" + value + "' needs string lora_name and lora_path");
    }
    bool pinned = false;
    for (const auto& [key, v] : o.items()) {
      if (key == "pinned") {
        if (!v.is_boolean()) return invalid_argument("--lora-paths: pinned must be a boolean");
        pinned = v.get<bool>();
      } else if (key != "lora_name" && key != "lora_path") {
        return invalid_argument("--lora-paths: unknown field '" + key + "' in '" + value + "'");
      }
    }
    return model::LoraAdapterPath{o["lora_name"].get<std::string>(),
                                  o["lora_path"].get<std::string>(), pinned};
  }
  const size_t eq = value.find('=');
  if (eq == std::string::npos) return model::LoraAdapterPath{value, value, false};
  return model::LoraAdapterPath{value.substr(0, eq), value.substr(eq + 1), false};
}

constexpr const char* kLoraOnly[] = {"--max-loras-per-batch", "--max-lora-rank",
                                     "--lora-target-modules", "--max-loaded-loras"};

}  // namespace

Result<std::vector<model::LoraAdapterPath>> parse_lora_paths(std::string_view joined) {
  // Split by spaces, rejoining the pieces of a JSON object (its braces balance at its end).
  std::vector<std::string> values;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= joined.size(); ++i) {
    const char c = i < joined.size() ? joined[i] : ' ';
    if (c == '{') ++depth;
    if (c == '}') --depth;
    if (i == joined.size() || (c == ' ' && depth <= 0)) {  // an unclosed object ends there
      if (i > start) values.emplace_back(joined.substr(start, i - start));
      start = i + 1;
      depth = 0;
    }
  }
  std::vector<model::LoraAdapterPath> out;
  std::set<std::string> names;
  for (const std::string& value : values) {
    SGL_ASSIGN_OR_RETURN(model::LoraAdapterPath p, parse_one(value));
    if (p.name.empty() || p.path.empty()) {
      return invalid_argument("--lora-paths: '" + value + "' needs a name and a path");
    }
    if (!names.insert(p.name).second) {
      return invalid_argument("--lora-paths: the name '" + p.name + "' is given twice");
    }
    out.push_back(std::move(p));
  }
  if (out.empty()) return invalid_argument("--lora-paths needs at least one adapter");
  return out;
}

Status parse_lora_flags(const CliArgs& args, bool speculative, runner::ModelRunnerOptions& runner,
                        scheduler::SchedulerOptions& scheduler, std::vector<std::string>& notes) {
  runner.enable_lora = args.has("--enable-lora") || args.has("--lora-paths");
  if (!runner.enable_lora) {
    for (const char* flag : kLoraOnly) {
      if (args.has(flag)) {
        notes.push_back(std::string(flag) + " has no effect without --enable-lora or --lora-paths");
      }
    }
    return Status::ok_status();
  }
  if (speculative) {
    return unimplemented(
        "LoRA (--enable-lora, --lora-paths) with speculative decoding is not "
        "supported");
  }
  if (const auto paths = args.get("--lora-paths")) {
    SGL_ASSIGN_OR_RETURN(runner.lora_paths, parse_lora_paths(*paths));
  }
  SGL_ASSIGN_OR_RETURN(const int64_t per_batch, args.get_int("--max-loras-per-batch", 8));
  SGL_ASSIGN_OR_RETURN(runner.max_lora_rank, args.get_int("--max-lora-rank", 0));
  SGL_ASSIGN_OR_RETURN(const int64_t max_loaded, args.get_int("--max-loaded-loras", 0));
  if (per_batch < 1 || per_batch > 4096) {
    return invalid_argument("--max-loras-per-batch must be in [1, 4096]");
  }
  if (runner.max_lora_rank < 0 || runner.max_lora_rank > 4096) {
    return invalid_argument("--max-lora-rank must be in [0, 4096] (0: any)");
  }
  const auto adapters = static_cast<int64_t>(runner.lora_paths.size());
  if (args.has("--max-loaded-loras") && (max_loaded < per_batch || max_loaded < adapters)) {
    return invalid_argument("--max-loaded-loras " + std::to_string(max_loaded) +
                            " must hold --max-loras-per-batch and every --lora-paths adapter (" +
                            std::to_string(adapters) + ")");
  }
  runner.max_loaded_loras = max_loaded;
  scheduler.max_loras_per_batch = static_cast<int32_t>(per_batch);
  // --lora-target-modules: the adapters may target these (SGLang sizes its buffers by them); the
  // model checks each adapter's against them when it reads its config.
  if (args.has("--lora-target-modules")) {
    model::LoraModules& allowed = runner.lora_target_modules;
    allowed = {};
    for (const std::string& name : args.get_list("--lora-target-modules")) {
      bool known = name == "all";
      for (int m = 0; m < model::kNumLoraModules; ++m) {
        const bool match = name == model::lora_module_name(static_cast<model::LoraModule>(m));
        allowed[m] = allowed[m] || match || name == "all";
        known = known || match;
      }
      if (!known) {
        return invalid_argument("--lora-target-modules: '" + name +
                                "' is not one of q_proj, k_proj, v_proj, o_proj, gate_proj, "
                                "up_proj, down_proj, all");
      }
    }
  }
  return Status::ok_status();
}

}  // namespace sgl::app
