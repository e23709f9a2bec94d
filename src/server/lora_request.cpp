// Resolving a request's LoRA adapter name to the engine's id.
#include "server/lora_request.h"

namespace sgl::server {
namespace {

std::string trimmed(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \t\n\r");
  if (begin == std::string_view::npos) return {};
  const size_t end = s.find_last_not_of(" \t\n\r");
  return std::string(s.substr(begin, end - begin + 1));
}

}  // namespace

std::optional<std::string> lora_of_model(const std::string& model,
                                         const std::string& served_model_name) {
  if (model.find(':') == std::string::npos || model == served_model_name) return std::nullopt;
  // The whole served name first: it may hold colons itself (an object-storage URI).
  const std::string prefix = served_model_name + ":";
  const std::string adapter = model.starts_with(prefix)
                                  ? trimmed(model.substr(prefix.size()))
                                  : trimmed(model.substr(model.find(':') + 1));
  if (adapter.empty()) return std::nullopt;
  return adapter;
}

void use_model_lora(const ServerInfo& info, const std::optional<std::string>& model,
                    RequestRouting& routing) {
  if (!model) return;
  if (std::optional<std::string> adapter = lora_of_model(*model, info.served_model_name)) {
    routing.lora_paths = {std::move(adapter)};
  }
}

Result<int32_t> resolve_lora_id(const ServerInfo& info, const RequestRouting& routing,
                                size_t prompt) {
  const std::optional<std::string> name = routing.lora_path_of(prompt);
  if (!name) return 0;
  if (!info.enable_lora) {
    return invalid_argument("LoRA adapter '" + *name +
                            "' was requested, but LoRA is not enabled. Please launch the server "
                            "with --enable-lora flag and preload adapters using --lora-paths.");
  }
  for (size_t i = 0; i < info.lora_adapters.size(); ++i) {
    if (info.lora_adapters[i].name == *name) return static_cast<int32_t>(i + 1);
  }
  std::string loaded;
  for (const model::LoraAdapterPath& a : info.lora_adapters) {
    loaded += (loaded.empty() ? "" : ", ") + a.name;
  }
  return invalid_argument("The following requested LoRA adapters are not loaded: " + *name +
                          "\nLoaded adapters: [" + loaded + "].");
}

}  // namespace sgl::server
