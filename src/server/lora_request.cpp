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

Status lease_lora(LoraRegistry& registry, const RequestRouting& routing, size_t prompt,
                  engine::GenerateRequest& request) {
  const std::optional<std::string> name = routing.lora_path_of(prompt);
  if (!name) return Status::ok_status();
  SGL_ASSIGN_OR_RETURN(LoraRegistry::Use use, registry.acquire(*name));
  request.lora_id = use.id;
  request.lora_lease = std::move(use.lease);
  return Status::ok_status();
}

}  // namespace sgl::server
