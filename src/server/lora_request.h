// SGLang's LoRA request fields: which of the served adapters a prompt runs with, from lora_path
// or (OpenAI routes, taking precedence as SGLang's) the model field's "base:adapter".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"
#include "engine/engine.h"
#include "server/lora_registry.h"
#include "server/openai_types.h"
#include "server/server_context.h"

namespace sgl::server {

// The adapter named by `model` ("<served name>:<adapter>", or any "<base>:<adapter>"), or none
// (no colon, the served name itself, or nothing after the colon).
std::optional<std::string> lora_of_model(const std::string& model,
                                         const std::string& served_model_name);

// The OpenAI routes (chat and completions): an adapter `model` names replaces lora_path, as
// SGLang's serving base prefers it.
void use_model_lora(const ServerInfo& info, const std::optional<std::string>& model,
                    RequestRouting& routing);

// Prompt `prompt`'s adapter (none, or one `registry` serves) into request.lora_id, with the
// lease that keeps it loaded while the request runs; a 400 for an adapter not loaded, or any
// with LoRA off, in SGLang's words.
Status lease_lora(LoraRegistry& registry, const RequestRouting& routing, size_t prompt,
                  engine::GenerateRequest& request);

}  // namespace sgl::server
