// NOTE: internal to src/server/*.cpp (it exposes nlohmann::ordered_json); never include it
// elsewhere. The lines of --log-requests (RequestLogger writes them): what each level keeps of a
// request and of its output (SGLang's RequestLogger rules), as text or as one JSON object.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "engine/generate_request.h"
#include "server/choice_stream.h"
#include "server/request_logger.h"
#include "tokenizer/tokenizer.h"

namespace sgl::server::request_log {

using json = nlohmann::ordered_json;

// `data` cut as SGLang's level 2 cuts it: a string of more than max_length characters (code
// points) keeps its first and last max_length / 2 around "...", a list of more than max_length
// entries its first and last halves around a "..." entry; objects and lists recursively.
json truncated(const json& data, size_t max_length);

// What `level` keeps of a request object: 0 drops its inputs (text, input_ids, ...), LoRA and
// sampling_params; 1 keeps sampling_params; 2 keeps everything cut by `truncated`; 3 all.
json request_fields(const json& request, int level);
// What `level` keeps of an output object: 0 and 1 drop text, output_ids and embedding; 2 cuts.
json output_fields(const json& out, int level);

// A finished request's metadata (every level logs it).
struct FinishedRequest {
  std::string rid;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
  std::string finish_reason;  // "stop", "length", "abort", ...
  double e2e_latency = 0;     // seconds
};

// The line at a request's arrival at the engine: "Receive: rid=<rid> obj=<fields>", or the JSON
// event "request.received".
std::string received_line(const RequestLogView& view, std::string_view rid, const json& request);
// The line at its finish: "request rid=<rid> prompt_tokens=... latency=<s>s" (with " out=<fields>"
// where the level keeps outputs), or the JSON event "request.finished" with out.meta_info.
std::string finished_line(const RequestLogView& view, const FinishedRequest& finished,
                          const json& out);
// The body of an API request as it arrives (levels 2 and 3 only, as SGLang's OpenAI routes):
// "Receive OpenAI: route=<path> obj=<body>", or the JSON event "request.received.openai". A body
// that is not JSON is logged as a string.
std::string api_request_line(const RequestLogView& view, std::string_view route,
                             std::string_view body);

// A generation request as the received line shows it (the line adds its rid): prompt_tokens,
// sampling_params, the prompt's input_ids and (levels 2 and 3, with a tokenizer) its decoded
// text, and the options it asked for.
json generate_request(const engine::GenerateRequest& request, const ChoiceOptions& options,
                      const tokenizer::Tokenizer* tokenizer, int level);

}  // namespace sgl::server::request_log
