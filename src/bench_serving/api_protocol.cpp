// Request bodies and response decoding for /generate, /v1/completions, /v1/chat/completions.
#include "bench_serving/api_protocol.h"

#include <nlohmann/json.hpp>

namespace sgl::bench_serving {
namespace {

using json = nlohmann::ordered_json;  // the extra body's schemas keep their order

std::optional<int64_t> int_field(const json& o, const char* name) {
  const auto it = o.find(name);
  if (it == o.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

std::optional<std::string> error_message(const json& o) {
  const auto it = o.find("error");
  if (it == o.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("message") && (*it)["message"].is_string()) {
    return (*it)["message"].get<std::string>();
  }
  return it->dump();
}

void read_usage(const json& o, ResponseUpdate& u) {
  const auto it = o.find("usage");
  if (it == o.end() || !it->is_object()) return;
  u.prompt_tokens = int_field(*it, "prompt_tokens");
  u.completion_tokens = int_field(*it, "completion_tokens");
}

// OpenAI completions / chat: the first choice's text (stream delta or whole message).
void read_openai(ApiKind api, const json& o, bool stream, ResponseUpdate& u) {
  read_usage(o, u);
  const auto choices = o.find("choices");
  if (choices == o.end() || !choices->is_array() || choices->empty()) return;
  const json& c = (*choices)[0];
  if (c.contains("finish_reason") && c["finish_reason"].is_string()) {
    u.finish_reason = c["finish_reason"].get<std::string>();
  }
  const json* text = nullptr;
  if (api == ApiKind::kCompletions) {
    if (c.contains("text")) text = &c["text"];
  } else {
    const char* holder = stream ? "delta" : "message";
    if (c.contains(holder) && c[holder].is_object() && c[holder].contains("content")) {
      text = &c[holder]["content"];
    }
  }
  if (text != nullptr && text->is_string()) u.new_text = text->get<std::string>();
}

// /generate's meta_info: token counts and {"type": reason} finish reasons.
void read_generate_meta(const json& o, ResponseUpdate& u) {
  const auto meta = o.find("meta_info");
  if (meta == o.end() || !meta->is_object()) return;
  u.prompt_tokens = int_field(*meta, "prompt_tokens");
  u.completion_tokens = int_field(*meta, "completion_tokens");
  const auto finish = meta->find("finish_reason");
  if (finish != meta->end() && finish->is_object() && finish->contains("type") &&
      (*finish)["type"].is_string()) {
    u.finish_reason = (*finish)["type"].get<std::string>();
  }
}

}  // namespace

Result<ApiKind> api_for_backend(const std::string& backend) {
  if (backend == "sglang" || backend == "sglang-native") return ApiKind::kGenerate;
  if (backend == "sglang-oai" || backend == "vllm" || backend == "openai" ||
      backend == "lmdeploy") {
    return ApiKind::kCompletions;
  }
  if (backend == "sglang-oai-chat" || backend == "vllm-chat" || backend == "openai-chat" ||
      backend == "lmdeploy-chat") {
    return ApiKind::kChat;
  }
  return invalid_argument(
      "--backend expects sglang, sglang-native, sglang-oai, vllm, openai, "
      "lmdeploy or a -chat variant, got '" +
      backend + "'");
}

const char* api_path(ApiKind api) {
  switch (api) {
    case ApiKind::kGenerate:
      return "/generate";
    case ApiKind::kCompletions:
      return "/v1/completions";
    case ApiKind::kChat:
      return "/v1/chat/completions";
  }
  return "";
}

Result<json> parse_extra_body(const std::string& text) {
  if (text.empty()) return json();
  json extra = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!extra.is_object()) return invalid_argument("--extra-request-body must be a JSON object");
  return extra;
}

std::string make_request_body(ApiKind api, const DatasetRow& row, const RequestBodyOptions& o) {
  json body;
  if (api == ApiKind::kGenerate) {
    body = {
        {"text", row.prompt},
        {"sampling_params",
         {{"temperature", 0.0}, {"max_new_tokens", row.output_len}, {"ignore_eos", o.ignore_eos}}},
        {"stream", o.stream}};
  } else {
    body = {{"model", o.model},
            {"temperature", 0.0},
            {"max_tokens", row.output_len},
            {"stream", o.stream},
            {"ignore_eos", o.ignore_eos}};
    if (api == ApiKind::kCompletions) {
      body["prompt"] = row.prompt;
    } else {
      body["messages"] = json::array({{{"role", "user"}, {"content", row.prompt}}});
    }
    if (o.stream) body["stream_options"] = {{"include_usage", true}};
  }
  if (o.extra_body.is_object()) body.update(o.extra_body);
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<ResponseUpdate> ResponseDecoder::on_event(std::string_view data) {
  ResponseUpdate u;
  if (data == "[DONE]") {
    u.done = true;
    return u;
  }
  const json o = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!o.is_object()) {
    return data_loss("not a JSON object in the stream: " + std::string(data.substr(0, 200)));
  }
  u.error = error_message(o);
  if (api_ != ApiKind::kGenerate) {
    read_openai(api_, o, /*stream=*/true, u);
    return u;
  }
  // /generate streams the cumulative text and counts.
  if (o.contains("text") && o["text"].is_string()) {
    const std::string& text = o["text"].get_ref<const std::string&>();
    if (text.size() > text_seen_) u.new_text = text.substr(text_seen_);
    text_seen_ = std::max(text_seen_, text.size());
  }
  read_generate_meta(o, u);
  if (u.completion_tokens) {
    u.new_tokens = std::max<int64_t>(0, *u.completion_tokens - tokens_seen_);
    tokens_seen_ = std::max(tokens_seen_, *u.completion_tokens);
  }
  return u;
}

Result<ResponseUpdate> ResponseDecoder::on_body(std::string_view body) {
  const json o = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!o.is_object()) {
    return data_loss("the response is not a JSON object: " + std::string(body.substr(0, 200)));
  }
  ResponseUpdate u;
  u.done = true;
  u.error = error_message(o);
  if (api_ != ApiKind::kGenerate) {
    read_openai(api_, o, /*stream=*/false, u);
    return u;
  }
  if (o.contains("text") && o["text"].is_string()) u.new_text = o["text"].get<std::string>();
  read_generate_meta(o, u);
  if (u.completion_tokens) u.new_tokens = *u.completion_tokens;
  return u;
}

}  // namespace sgl::bench_serving
