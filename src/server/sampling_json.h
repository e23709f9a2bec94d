// NOTE: internal to src/server/*.cpp (it exposes nlohmann::ordered_json), as request_json.h.
// The sampling fields every generating route reads: OpenAI's at a request's top level, SGLang's
// inside /generate's sampling_params (and --preferred-sampling-params), with their ranges and the
// fields sgl.cpp refuses by name.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "server/openai_types.h"

namespace sgl::server::sampling_json {

// /generate's max_new_tokens where neither the request nor the server gives one (SGLang's
// SamplingParams default).
inline constexpr int64_t kGenerateDefaultMaxNewTokens = 128;

// Sampling fields at the top level (OpenAI, `native` false) or inside sampling_params (SGLang's
// names, `native` true: min_new_tokens, max_new_tokens, sampling_seed), over `s`'s defaults.
Status read_sampling(const nlohmann::ordered_json& o, SamplingInput& s, bool native);
// min_tokens may not exceed max_tokens (SGLang: min_new_tokens in [0, max_new_tokens]); `native`
// (/generate): with none given, kGenerateDefaultMaxNewTokens.
Status check_min_tokens(const SamplingInput& s, bool native);
// A stop field (`key`: stop, stop_regex, Messages' stop_sequences): a string or a list of at
// most 64 strings of bounded length, appended to `out` (empty strings dropped).
Status read_stop(const nlohmann::ordered_json& o, const char* key, std::vector<std::string>& out);
// An OpenAI max token count (`key`: max_tokens or max_completion_tokens), >= 0.
Status read_max_tokens(const nlohmann::ordered_json& o, const char* key, SamplingInput& s);
// SGLang's sampling_params object (/generate's, and --preferred-sampling-params): read_sampling
// with SGLang's names, only SamplingParams' keys (SGLang raises on any other), max_new_tokens
// >= 0 and min_new_tokens at most it.
Status read_sampling_params(const nlohmann::ordered_json& params, SamplingInput& s);
// /generate's top level holds no sampling field but the GenerateReqInput ones (SGLang drops
// them there; sgl.cpp refuses them instead of ignoring them).
Status refuse_top_level_sampling(const nlohmann::ordered_json& o);
// The sampling features sgl.cpp lacks (custom logit processors, vLLM's structured_outputs),
// refused by name wherever they appear.
Status refuse_unsupported_sampling(const nlohmann::ordered_json& o);

}  // namespace sgl::server::sampling_json
