// NOTE: internal to src/server/*.cpp (it exposes nlohmann::ordered_json), as request_json.h.
// The fields every generating route reads to route a request (RequestRouting): SGLang's rid,
// routed_dp_rank, priority, lora_path, and the prefix cache namespace (extra_key, cache_salt).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/status.h"
#include "server/openai_types.h"

namespace sgl::server::routing_json {

// `batch_prompts` (/generate only): the prompts of its batch (0: not a batch), whose rid,
// lora_path, extra_key and cache_salt may be lists of one per prompt; nullopt where one value
// serves the whole request (the OpenAI routes).
Status read_routing(const nlohmann::ordered_json& o, std::optional<size_t> batch_prompts,
                    RequestRouting& out);

}  // namespace sgl::server::routing_json
