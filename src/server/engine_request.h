// From API fields to engine requests: checks against the model (context, vocabulary),
// submission of a request's choices, request ids.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/generate_request.h"
#include "server/choice_stream.h"
#include "server/openai_types.h"
#include "server/server_context.h"

namespace sgl::server {

// The prompt's ids against the model: not empty, shorter than its context, inside its
// vocabulary (kInvalidArgument saying which).
Status check_prompt_ids(const ServerContext& ctx, const std::vector<int32_t>& prompt_ids);

// The engine request for sample `index` (of n; with a seed, sample i uses seed + i) of
// `prompt_ids`. With no max_tokens given, `default_max_tokens` applies (nullopt: up to the
// context). An explicit max_tokens that does not fit the context is an error, as in SGLang.
Result<engine::GenerateRequest> build_engine_request(const ServerContext& ctx,
                                                     const SamplingInput& s,
                                                     std::vector<int32_t> prompt_ids, int64_t index,
                                                     std::optional<int64_t> default_max_tokens);

// Text to tokenize may be at most max(1 MiB, 16 bytes per token of the context) long: longer
// text cannot fit the context with any real vocabulary, and tokenizing it only costs time and
// memory. An error (400) naming `field` otherwise.
Status check_text_length(const ServerContext& ctx, size_t bytes, std::string_view field);
// Prompts as a route takes them: text within check_text_length's limit, and none at all on a
// server without a tokenizer (--skip-tokenizer-init), which takes token ids only. An error (400)
// naming `field` otherwise.
Status check_prompts(const ServerContext& ctx, const std::vector<PromptInput>& prompts,
                     std::string_view field);

// The text prompt's token ids (or the given ids).
std::vector<int32_t> prompt_ids(const ServerContext& ctx, const PromptInput& prompt,
                                bool add_special_tokens = true);

// What `routing` asks of the engine request for prompt `prompt` (of a batch): its cache
// namespace, priority and LoRA adapter (a 400 for one not loaded).
Status apply_routing(ServerContext& ctx, const RequestRouting& routing, size_t prompt,
                     engine::GenerateRequest& request);

struct ChoicePlan {
  engine::GenerateRequest request;
  ChoiceOptions options;
};

// A stop string that is exactly one special token's text (<|im_end|>, <|eot_id|>): the request
// also stops on that token, since SGLang matches stop strings on text that keeps special tokens,
// while a choice's text skips them by default; its finish names the string.
std::optional<int32_t> special_token_stop(const tokenizer::Tokenizer& tokenizer,
                                          std::string_view stop);

// A choice's text options from its sampling fields; token_texts: the logprob listings show
// token texts.
ChoiceOptions choice_options(const SamplingInput& s, bool token_texts);

// Submits every plan, in order, to the replica `routed_dp_rank` names (none: the load balancer
// chooses); if one fails, aborts those already submitted and returns its error (a full queue is
// kResourceExhausted -> 503).
Result<std::vector<std::unique_ptr<ChoiceStream>>> submit_choices(
    ServerContext& ctx, std::vector<ChoicePlan> plans,
    std::optional<int64_t> routed_dp_rank = std::nullopt);

// A fresh request id: `prefix` + 32 hex digits.
std::string make_request_id(std::string_view prefix);
// A reply's id: the client's (SGLang's rid), else a fresh one with `prefix`.
std::string reply_id(const std::string& rid, std::string_view prefix);
// The request ids a client chose (routing.rid; none when it chose none), which a request holds
// while it runs (RequestRegistry::claim).
std::vector<std::string> client_request_ids(const RequestRouting& routing);
// Unix time in seconds.
int64_t unix_time();

}  // namespace sgl::server
