// The POST /tokenize reply body, built as each prompt is encoded.
#pragma once

#include <cstdint>
#include <string>

#include "server/openai_types.h"
#include "tokenizer/tokenizer.h"

namespace sgl::server {

// {"tokens":[ids],"count":n,"max_model_len":m} for one prompt; for a batch, "tokens" and "count"
// hold one entry per prompt. Prompts are encoded one at a time and their ids written out as
// digits at once, so memory stays a small multiple of the text (docs/perf-log/
// 2026-11-25-tokenize-memory.md).
std::string tokenize_reply_body(const tokenizer::Tokenizer& tokenizer, const TokenizeInput& input,
                                int64_t max_model_len);

}  // namespace sgl::server
