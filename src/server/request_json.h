// NOTE: internal to src/server/*.cpp (it exposes nlohmann::ordered_json); never include it
// elsewhere. What the request parsers and reply builders share: a body parsed into a JSON object
// within the nesting limit, field lookup and errors, integers, token ids and prompts in the API's
// forms, JSON replies, and the chat request read from an already-parsed object (the Messages route
// translates into it).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "server/choice_stream.h"
#include "server/http_types.h"
#include "server/openai_types.h"
#include "server/responses_json.h"

namespace sgl::server::request_json {

// The body as a JSON object: nesting checked against kMaxJsonDepth before parsing; nlohmann
// rejects invalid UTF-8 and lone surrogates.
Result<nlohmann::ordered_json> parse_object(std::string_view body);
// parse_object, with an empty (or blank) body read as {} (e.g. /flush_cache, /pause_generation).
Result<nlohmann::ordered_json> parse_optional_object(std::string_view body);

// kInvalidArgument "'field' problem".
Status field_error(std::string_view field, std::string_view problem);

// The field, unless absent or null.
const nlohmann::ordered_json* find(const nlohmann::ordered_json& o, const char* key);

// find() for a field the caller moves out of the parsed body.
nlohmann::ordered_json* find_mutable(nlohmann::ordered_json& o, const char* key);

// Typed readers: an absent or null field leaves `out` unchanged; a value of another type (or a
// non-finite number) is kInvalidArgument naming the field.
Status read(const nlohmann::ordered_json& o, const char* key, bool& out);
Status read(const nlohmann::ordered_json& o, const char* key, double& out);
Status read(const nlohmann::ordered_json& o, const char* key, int64_t& out);
Status read(const nlohmann::ordered_json& o, const char* key, std::optional<int64_t>& out);
Status read(const nlohmann::ordered_json& o, const char* key, std::string& out);
Status read(const nlohmann::ordered_json& o, const char* key, std::optional<std::string>& out);

// kInvalidArgument "'key' must be in [lo, hi], got v" outside the range.
Status check_range(std::string_view key, double v, double lo, double hi);

// Whether a value asks for nothing: false, "", [] or {}.
bool asks_nothing(const nlohmann::ordered_json& v);

// A request field for a feature sgl.cpp does not have, and why.
struct RefusedField {
  const char* name;
  const char* reason;
};
// kUnimplemented "'name' is not supported: reason" for the first of `fields` present in `o`
// with a value that asks for something.
Status refuse_fields(const nlohmann::ordered_json& o, std::span<const RefusedField> fields);

// Fields whose only values sgl.cpp can honour are the ones that ask for nothing new; any other
// value is refused (400 naming the field and the missing feature).
struct LimitedField {
  const char* name;
  std::array<const char*, 2> allowed;  // besides null and asks_nothing(); nullptr: unused
  const char* feature;
};
// kUnimplemented "'name' = value is not supported: feature" for the first of `fields` present in
// `o` with a value other than those allowed.
Status reject_limited(const nlohmann::ordered_json& o, std::span<const LimitedField> fields);

// SGLang's stream_reasoning false (the reasoning held back and sent whole), which only the chat
// route honours: refused on `route`, whose reasoning streams as it is made.
Status refuse_held_reasoning(const nlohmann::ordered_json& o, std::string_view route);

// `v` as an integer (an integral float such as 3.0 too); "'key' must be an integer" otherwise.
Status to_int(const nlohmann::ordered_json& v, std::string_view key, int64_t& out);
// `v` as a list of token ids (integers in [0, 2^31)).
Status to_ids(const nlohmann::ordered_json& v, std::string_view key, std::vector<int32_t>& out);
// A prompt in any of the API's forms: "text", ["a", "b"], [1, 2] or [[1, 2], [3]] (at most
// kMaxBatchPrompts of them); `batch`: a list of prompts was given.
Status read_prompts(const nlohmann::ordered_json& v, std::string_view key,
                    std::vector<PromptInput>& out, bool& batch);
// SGLang's native prompt (/generate, /encode): exactly one of "text" (a string or strings) and
// "input_ids" (ids or id lists), read by read_prompts. Returns the key it read.
Result<std::string_view> read_text_or_input_ids(const nlohmann::ordered_json& o,
                                                std::vector<PromptInput>& out, bool& batch);

// Message content as text: a string, or a list of parts whose "type" is one of `text_types`,
// their "text"s joined by `separator` (SGLang renders a message's text parts joined by a space:
// kPartSeparator); any other part type is refused by name (kUnimplemented). `where` names the
// content in errors.
inline constexpr std::string_view kPartSeparator = " ";
Result<std::string> joined_text(const nlohmann::ordered_json& content, const std::string& where,
                                std::initializer_list<std::string_view> text_types,
                                std::string_view separator = kPartSeparator);

// A history tool call's "arguments" as templates take them: the JSON object a string holds
// (templates write `arguments | tojson`, which would quote a string once more), as SGLang and
// vLLM hand them over; anything else (invalid JSON, a non-object) as it came.
nlohmann::ordered_json template_arguments(const nlohmann::ordered_json& arguments);

// Sets chat_template_kwargs.`key` to `value` in a chat request body (keeping the kwargs the
// client passed); a passed value that differs is kInvalidArgument naming `field`, which set it.
Status set_template_kwarg(nlohmann::ordered_json& chat, const char* key,
                          const nlohmann::ordered_json& value, std::string_view field);

// A reasoning effort (chat's reasoning_effort, Responses' reasoning.effort, named `field`):
// "none" turns thinking off (chat_template_kwargs.enable_thinking false), a level (minimal, low,
// medium, high, xhigh, max) turns it on and reaches the template as reasoning_effort (gpt-oss's
// templates read it). Set in the chat body as set_template_kwarg does; true: thinking on.
Result<bool> apply_reasoning_effort(const nlohmann::ordered_json& effort, std::string_view field,
                                    nlohmann::ordered_json& chat);

// A reply body; invalid UTF-8 in generated text becomes U+FFFD.
template <typename Json>
std::string dump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// --enable-cache-report: an OpenAI usage object's prompt_tokens_details.cached_tokens.
void add_cache_report(nlohmann::ordered_json& usage, int64_t cached_tokens);

// A JSON reply with `status` (replies keep their fields in the order written).
HttpResponse json_response(const nlohmann::ordered_json& body, int status = 200);

// The delta's tokens as OpenAI's logprob entries (chat's logprobs.content, the Responses API's
// output_text logprobs): [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob",
// "bytes"}]}]; needs the delta's token texts (ChoiceOptions::token_texts).
nlohmann::ordered_json token_logprobs(const ChoiceDelta& d);

// parse_chat_request and parse_completion_request (openai_json.h) on a parsed body.
Result<ChatRequest> parse_chat_object(const nlohmann::ordered_json& o,
                                      const SamplingInput& defaults);
Result<CompletionRequest> parse_completion_object(const nlohmann::ordered_json& o,
                                                  const SamplingInput& defaults);
// parse_responses_request (responses_json.h) on a parsed body.
Result<ResponsesRequest> parse_responses_object(nlohmann::ordered_json o,
                                                const SamplingInput& defaults,
                                                const ResponseStore* store);

// Each of `o`'s keys is one of `known`; else kInvalidArgument naming `prefix` + the key and the
// known ones (a field a route does not take is refused, never ignored).
Status check_fields(const nlohmann::ordered_json& o, std::initializer_list<std::string_view> known,
                    std::string_view prefix = {});

// A tool call's arguments as the JSON object they hold; {} where they are not one (an output
// cut short), as SGLang gives.
nlohmann::ordered_json arguments_object(const std::string& arguments);

// Chat template kwargs (a request's, or --default-chat-template-kwargs, named `field`) must not
// set what the request's own fields set (messages, tools, add_generation_prompt,
// continue_final_message) nor carry a template (chat_template: untrusted code, as SGLang).
Status check_template_kwargs(const nlohmann::ordered_json& kwargs, std::string_view field);

}  // namespace sgl::server::request_json
