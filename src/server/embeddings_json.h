// POST /v1/embeddings (OpenAI) and /encode (SGLang native) bodies -> typed requests. The input is
// text or token ids, one or a list, as the completion route's prompt; an empty input (or an
// empty one in the list) is refused. Fields for features sgl.cpp lacks are refused by name;
// unknown fields are ignored, as the other routes do.
#pragma once

#include <string_view>

#include "core/status.h"
#include "server/openai_types.h"

namespace sgl::server {

// `input`, `model`, `encoding_format` ("float" or "base64"), `dimensions`, `user` (no effect).
Result<EmbeddingRequest> parse_embedding_request(std::string_view body);
// Exactly one of `text` and `input_ids`, and `rid`.
Result<EncodeInput> parse_encode_request(std::string_view body);

}  // namespace sgl::server
