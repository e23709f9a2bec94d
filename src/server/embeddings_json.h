// POST /v1/embeddings (OpenAI), /encode (SGLang native) and /v1/classify (SGLang's) bodies ->
// typed requests. The input is text or token ids, one or a list, as the completion route's
// prompt; an empty input (or an empty one in the list) is refused. Fields for features sgl.cpp
// lacks are refused by name; unknown fields are ignored, as the other routes do.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "server/openai_types.h"

namespace sgl::server {

// `input`, `model`, `encoding_format` ("float" or "base64"), `dimensions`, `user` (no effect),
// SGLang's `rid` and `priority`.
Result<EmbeddingRequest> parse_embedding_request(std::string_view body);
// Exactly one of `text` and `input_ids`, `rid`, `priority`.
Result<EncodeInput> parse_encode_request(std::string_view body);

// POST /v1/classify: a classification model's label for each input (SGLang's ClassifyRequest).
struct ClassifyRequest {
  std::optional<std::string> model;
  std::vector<PromptInput> inputs;  // one per `input` text, or one list of token ids
  PoolingRouting routing;
};

// `input` (a text, a list of texts, or one prompt's token ids: SGLang's ClassifyInput; no text
// may be blank), `model`, `user` (no effect), `rid`, `priority`.
Result<ClassifyRequest> parse_classify_request(std::string_view body);

}  // namespace sgl::server
