// Embedding request parsing (/v1/embeddings, /encode).
#include "server/embeddings_json.h"

#include <nlohmann/json.hpp>
#include <string>

#include "server/request_json.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;
using request_json::field_error;
using request_json::find;

constexpr const char* kNoMultimodal = "multimodal inputs are not implemented";
// Fields of SGLang's embedding requests for features sgl.cpp does not have.
constexpr request_json::RefusedField kRefused[] = {
    {"image_data", kNoMultimodal},
    {"audio_data", kNoMultimodal},
    {"video_data", kNoMultimodal},
    {"input_embeds", "input embeddings are not implemented"},
    {"lora_path", "LoRA adapters are not implemented"},
    {"is_cross_encoder_request", "cross-encoder scoring is not implemented"},
    {"return_pooled_hidden_states", "hidden states in replies are not implemented"},
    {"embed_override_token_id", "embedding overrides are not implemented"},
    {"embed_overrides", "embedding overrides are not implemented"},
};

// SGLang's `rid` (one string: a list of one per prompt is not taken) and `priority`.
Status read_pooling_routing(const json& o, PoolingRouting& out) {
  std::optional<std::string> rid;
  SGL_RETURN_IF_ERROR(request_json::read(o, "rid", rid));
  out.rid = rid.value_or("");
  return request_json::read(o, "priority", out.priority);
}

// None of the prompts read from `key` is empty.
Status check_nonempty(const std::vector<PromptInput>& prompts, std::string_view key, bool batch) {
  for (size_t i = 0; i < prompts.size(); ++i) {
    const PromptInput& p = prompts[i];
    if (p.is_text ? p.text.empty() : p.ids.empty()) {
      const std::string at =
          batch ? std::string(key) + "[" + std::to_string(i) + "]" : std::string(key);
      return field_error(
          at, p.is_text ? "must not be an empty string" : "must not be an empty list of token ids");
    }
  }
  return Status::ok_status();
}

}  // namespace

Result<EmbeddingRequest> parse_embedding_request(std::string_view body) {
  SGL_ASSIGN_OR_RETURN(json o, request_json::parse_object(body));
  EmbeddingRequest r;
  const json* input = find(o, "input");
  if (!input) return field_error("input", "is required");
  bool batch = false;
  SGL_RETURN_IF_ERROR(request_json::read_prompts(*input, "input", r.inputs, batch));
  SGL_RETURN_IF_ERROR(check_nonempty(r.inputs, "input", batch));
  SGL_RETURN_IF_ERROR(request_json::read(o, "model", r.model));
  std::optional<std::string> format;
  SGL_RETURN_IF_ERROR(request_json::read(o, "encoding_format", format));
  if (format && *format != "float" && *format != "base64") {
    return field_error("encoding_format", "must be 'float' or 'base64', got '" + *format + "'");
  }
  r.base64 = format == "base64";
  if (const json* dimensions = find(o, "dimensions")) {
    int64_t d = 0;
    SGL_RETURN_IF_ERROR(request_json::to_int(*dimensions, "dimensions", d));
    if (d < 1) return field_error("dimensions", "must be at least 1");
    r.dimensions = d;
  }
  std::optional<std::string> user;  // describes the caller: checked, no effect
  SGL_RETURN_IF_ERROR(request_json::read(o, "user", user));
  SGL_RETURN_IF_ERROR(read_pooling_routing(o, r.routing));
  SGL_RETURN_IF_ERROR(request_json::refuse_fields(o, kRefused));
  return r;
}

Result<EncodeInput> parse_encode_request(std::string_view body) {
  SGL_ASSIGN_OR_RETURN(json o, request_json::parse_object(body));
  EncodeInput r;
  SGL_ASSIGN_OR_RETURN(const std::string_view key,
                       request_json::read_text_or_input_ids(o, r.prompts, r.batch));
  SGL_RETURN_IF_ERROR(check_nonempty(r.prompts, key, r.batch));
  SGL_RETURN_IF_ERROR(read_pooling_routing(o, r.routing));
  constexpr request_json::RefusedField kEncodeOnly[] = {
      {"sampling_params", "an embedding request samples nothing"},
      {"dimensions", "the model's embeddings are served at their own size (no truncation)"},
  };
  SGL_RETURN_IF_ERROR(request_json::refuse_fields(o, kEncodeOnly));
  SGL_RETURN_IF_ERROR(request_json::refuse_fields(o, kRefused));
  return r;
}

Result<ClassifyRequest> parse_classify_request(std::string_view body) {
  SGL_ASSIGN_OR_RETURN(json o, request_json::parse_object(body));
  ClassifyRequest r;
  const json* input = find(o, "input");
  if (!input) return field_error("input", "is required");
  bool batch = false;
  SGL_RETURN_IF_ERROR(request_json::read_prompts(*input, "input", r.inputs, batch));
  if (batch && !r.inputs.front().is_text) {  // SGLang's ClassifyInput: one prompt's ids only
    return field_error("input", "must be a text, a list of texts or one list of token ids");
  }
  SGL_RETURN_IF_ERROR(check_nonempty(r.inputs, "input", batch));
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const PromptInput& p = r.inputs[i];
    if (p.is_text && p.text.find_first_not_of(" \t\n\r\f\v") == std::string::npos) {
      return field_error(batch ? "input[" + std::to_string(i) + "]" : std::string("input"),
                         "must not be blank (whitespace only)");
    }
  }
  SGL_RETURN_IF_ERROR(request_json::read(o, "model", r.model));
  std::optional<std::string> user;  // describes the caller: checked, no effect
  SGL_RETURN_IF_ERROR(request_json::read(o, "user", user));
  SGL_RETURN_IF_ERROR(read_pooling_routing(o, r.routing));
  return r;
}

}  // namespace sgl::server
