// The lines of --log-requests.
#include "server/request_log_json.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace sgl::server::request_log {
namespace {

// Inputs and outputs (SGLang's skip names), dropped at levels 0 and 1.
constexpr std::string_view kInputFields[] = {
    "text", "input_ids", "input_embeds", "image_data", "audio_data", "video_data", "lora_path"};
constexpr std::string_view kOutputFields[] = {"text", "output_ids", "embedding"};

template <size_t N>
bool is_one_of(std::string_view name, const std::string_view (&names)[N]) {
  for (std::string_view n : names) {
    if (n == name) return true;
  }
  return false;
}

// The byte offset of the code point `count` code points into `s` (s.size() when it has fewer).
size_t code_point_offset(std::string_view s, size_t count) {
  size_t seen = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;  // a continuation byte
    if (seen == count) return i;
    ++seen;
  }
  return s.size();
}

size_t code_points(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string cut_middle(std::string_view s, size_t max_length) {
  const size_t length = code_points(s);
  if (length <= max_length) return std::string(s);
  const size_t half = max_length / 2;
  return std::string(s.substr(0, code_point_offset(s, half))) + "..." +
         std::string(s.substr(code_point_offset(s, length - half)));
}

// Level 3 keeps everything whole; level 2 cuts; below, what is kept is metadata (no cut).
json cut_for(const json& data, int level) {
  return level == 2 ? truncated(data, kRequestLogMaxLength) : data;
}

// Invalid UTF-8 (a decoded text that ends mid-character) as U+FFFD, never an exception.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Python's datetime.now().isoformat(): local time with microseconds.
std::string iso_timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                          now.time_since_epoch() - std::chrono::seconds(seconds))
                          .count();
  std::tm local{};
  localtime_r(&seconds, &local);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &local);
  char text[64];
  std::snprintf(text, sizeof(text), "%s.%06lld", date, static_cast<long long>(micros));
  return text;
}

// SGLang's log_json: the timestamp and event first, then the event's fields.
json event(std::string_view name) { return json{{"timestamp", iso_timestamp()}, {"event", name}}; }

// A line naming what arrived (`key`=`value`: its rid or route) and its `fields`: the JSON event
// `event_name`, or "<text_head><key>=<value> obj=<fields>".
std::string arrival_line(const RequestLogView& view, std::string_view event_name,
                         std::string_view text_head, const char* key, std::string_view value,
                         json fields) {
  if (view.format == RequestLogFormat::kJson) {
    json line = event(event_name);
    line[key] = value;
    line["obj"] = std::move(fields);
    return dump(line);
  }
  return std::string(text_head) + key + "=" + std::string(value) + " obj=" + dump(fields);
}

}  // namespace

json truncated(const json& data, size_t max_length) {
  if (data.is_string()) return cut_middle(data.get_ref<const std::string&>(), max_length);
  if (data.is_object()) {
    json out = json::object();
    for (const auto& [key, value] : data.items()) out[key] = truncated(value, max_length);
    return out;
  }
  if (!data.is_array()) return data;
  json out = json::array();
  const size_t half = max_length / 2;
  const bool cut = data.size() > max_length;
  for (size_t i = 0; i < data.size(); ++i) {
    if (cut && i == half) {
      out.push_back("...");
      i = data.size() - half;
      if (i == data.size()) break;  // max_length 1: nothing kept beside the marker
    }
    out.push_back(truncated(data[i], max_length));
  }
  return out;
}

json request_fields(const json& request, int level) {
  if (level >= 2) return cut_for(request, level);
  json out = json::object();
  for (const auto& [key, value] : request.items()) {
    if (is_one_of(key, kInputFields) || (level == 0 && key == "sampling_params")) continue;
    out[key] = value;
  }
  return out;
}

json output_fields(const json& out, int level) {
  if (level >= 2) return cut_for(out, level);
  json kept = json::object();
  for (const auto& [key, value] : out.items()) {
    if (!is_one_of(key, kOutputFields)) kept[key] = value;
  }
  return kept;
}

std::string received_line(const RequestLogView& view, std::string_view rid, const json& request) {
  return arrival_line(view, "request.received", "Receive: ", "rid", rid,
                      request_fields(request, view.level));
}

std::string finished_line(const RequestLogView& view, const FinishedRequest& finished,
                          const json& out) {
  json fields = output_fields(out, view.level);
  if (view.format == RequestLogFormat::kJson) {
    fields["meta_info"] = {{"id", finished.rid},
                           {"finish_reason", {{"type", finished.finish_reason}}},
                           {"prompt_tokens", finished.prompt_tokens},
                           {"completion_tokens", finished.completion_tokens},
                           {"cached_tokens", finished.cached_tokens},
                           {"e2e_latency", finished.e2e_latency}};
    json line = event("request.finished");
    line["rid"] = finished.rid;
    line["out"] = std::move(fields);
    return dump(line);
  }
  char latency[32];
  std::snprintf(latency, sizeof(latency), "%.3f", finished.e2e_latency);
  std::string line = "request rid=" + finished.rid +
                     " prompt_tokens=" + std::to_string(finished.prompt_tokens) +
                     " completion_tokens=" + std::to_string(finished.completion_tokens) +
                     " cached_tokens=" + std::to_string(finished.cached_tokens) +
                     " finish_reason=" + finished.finish_reason + " latency=" + latency + "s";
  if (!fields.empty()) line += " out=" + dump(fields);
  return line;
}

std::string api_request_line(const RequestLogView& view, std::string_view route,
                             std::string_view body) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) parsed = std::string(body);
  return arrival_line(view, "request.received.openai", "Receive OpenAI: ", "route", route,
                      cut_for(parsed, view.level));
}

json generate_request(const engine::GenerateRequest& request, const ChoiceOptions& options,
                      const tokenizer::Tokenizer* tokenizer, int level) {
  const sampling::SamplingParams& s = request.sampling;
  json sp = {{"temperature", s.temperature},
             {"top_p", s.top_p},
             {"top_k", s.top_k},
             {"min_p", s.min_p},
             {"max_new_tokens", request.max_new_tokens},
             {"min_new_tokens", s.min_new_tokens},
             {"frequency_penalty", s.frequency_penalty},
             {"presence_penalty", s.presence_penalty},
             {"repetition_penalty", s.repetition_penalty},
             {"ignore_eos", request.ignore_eos},
             {"skip_special_tokens", options.skip_special_tokens},
             {"no_stop_trim", options.no_stop_trim}};
  if (s.seed) sp["seed"] = *s.seed;
  if (!options.stop.empty()) sp["stop"] = options.stop;
  if (!options.stop_regex.empty()) sp["stop_regex"] = options.stop_regex;
  if (!request.stop_token_ids.empty()) sp["stop_token_ids"] = request.stop_token_ids;
  if (!s.logit_bias.empty()) {
    json bias = json::object();
    for (const sampling::LogitBias& b : s.logit_bias) bias[std::to_string(b.id)] = b.bias;
    sp["logit_bias"] = std::move(bias);
  }
  if (request.grammar != nullptr) sp["constrained"] = true;  // a JSON schema, regex, EBNF, ...

  json r = json::object();
  if (level >= 2 && tokenizer != nullptr) {
    tokenizer::DecodeOptions decode;
    decode.skip_special_tokens = false;  // the prompt as the model reads it (SGLang's)
    r["text"] = tokenizer->decode(request.input_ids, decode);
  }
  if (level >= 2) r["input_ids"] = request.input_ids;  // (levels 0 and 1 drop it)
  r["prompt_tokens"] = request.input_ids.size();
  r["sampling_params"] = std::move(sp);
  if (request.return_logprob) {
    r["return_logprob"] = true;
    r["top_logprobs_num"] = request.top_logprobs_num;
    r["logprob_start_len"] = request.logprob_start_len;
  }
  if (request.lora_id != 0) r["lora_id"] = request.lora_id;  // the adapter's number
  if (request.priority) r["priority"] = *request.priority;
  if (request.return_hidden_states) r["return_hidden_states"] = true;
  if (request.return_routed_experts) r["return_routed_experts"] = true;
  return r;
}

}  // namespace sgl::server::request_log
