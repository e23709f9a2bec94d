// The three request shapes the benchmark speaks (SGLang /generate, OpenAI completions, OpenAI
// chat): request bodies, and what each streamed event or whole response says.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "bench_serving/dataset.h"
#include "core/status.h"

namespace sgl::bench_serving {

enum class ApiKind { kGenerate, kCompletions, kChat };

// SGLang's --backend names: sglang / sglang-native -> /generate; sglang-oai, vllm, openai,
// lmdeploy -> /v1/completions; sglang-oai-chat, vllm-chat, openai-chat, lmdeploy-chat ->
// /v1/chat/completions.
Result<ApiKind> api_for_backend(const std::string& backend);
const char* api_path(ApiKind api);

struct RequestBodyOptions {
  std::string model;
  bool stream = true;
  bool ignore_eos = true;
  nlohmann::ordered_json extra_body;  // an object merged into every body (null = none)
};

// --extra-request-body, parsed once: an object, or null for "".
Result<nlohmann::ordered_json> parse_extra_body(const std::string& text);

// Greedy (temperature 0), max tokens = row.output_len, ignore_eos as asked; streaming asks for
// usage in the last event (stream_options.include_usage) on the OpenAI endpoints.
std::string make_request_body(ApiKind api, const DatasetRow& row, const RequestBodyOptions& o);

// What one event (streaming) or the whole body (not streaming) tells.
struct ResponseUpdate {
  bool done = false;       // the "[DONE]" event
  std::string new_text;    // text that arrived with this event
  int64_t new_tokens = 0;  // tokens that arrived with it (known for /generate; else 0)
  std::optional<int64_t> prompt_tokens;
  std::optional<int64_t> completion_tokens;  // cumulative, when the server says
  std::optional<std::string> finish_reason;
  std::optional<std::string> error;  // an error object in the stream or body
};

// Decodes one response's events in order; /generate streams cumulative text and counts, which
// this turns into increments.
class ResponseDecoder {
 public:
  explicit ResponseDecoder(ApiKind api) : api_(api) {}
  Result<ResponseUpdate> on_event(std::string_view data);
  Result<ResponseUpdate> on_body(std::string_view body);

 private:
  ApiKind api_;
  size_t text_seen_ = 0;     // /generate: cumulative text length so far
  int64_t tokens_seen_ = 0;  // /generate: cumulative completion tokens so far
};

}  // namespace sgl::bench_serving
