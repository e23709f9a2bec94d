// JSON request bodies -> typed requests. Errors are kInvalidArgument (bad JSON, wrong types,
// out-of-range values; the message names the field) or kUnimplemented (valid requests for
// features not built yet). Unknown top-level fields are ignored, as SGLang's OpenAI schemas
// drop them; /generate's sampling_params refuses unknown keys, as SGLang's SamplingParams does.
#pragma once

#include <string_view>

#include "core/status.h"
#include "server/openai_types.h"

namespace sgl::server {

// Deepest JSON nesting a request may use.
constexpr int kMaxJsonDepth = 64;

// `defaults` are the sampling values a request starts from before its own fields (the model's
// generation_config.json under --sampling-defaults model; OpenAI's otherwise).
Result<CompletionRequest> parse_completion_request(std::string_view body,
                                                   const SamplingInput& defaults = {});
Result<ChatRequest> parse_chat_request(std::string_view body, const SamplingInput& defaults = {});
Result<GenerateInput> parse_generate_request(std::string_view body,
                                             const SamplingInput& defaults = {});
// SGLang's --preferred-sampling-params: a JSON object of sampling parameters (/generate's
// sampling_params names: temperature, top_p, top_k, min_p, frequency_penalty, presence_penalty,
// repetition_penalty, max_new_tokens) that become `defaults` for every route, where a request
// does not set them. kInvalidArgument naming the field otherwise.
Result<SamplingInput> apply_preferred_sampling_params(std::string_view json_text,
                                                      SamplingInput defaults);
Result<TokenizeInput> parse_tokenize_request(std::string_view body);
Result<DetokenizeInput> parse_detokenize_request(std::string_view body);
Result<AbortInput> parse_abort_request(std::string_view body);
// Bodies that may be empty or "{}" (e.g. /flush_cache): OK unless present and not an object.
Status check_optional_object(std::string_view body);

}  // namespace sgl::server
