// Ollama's API bodies, as SGLang serves them, in the OpenAI routes' terms, so every sampling
// field keeps one meaning: POST /api/chat -> the chat request the chat route runs (messages,
// their thinking and tool calls, tools, format as response_format, think as the thinking
// switch) and POST /api/generate -> a completion request of the raw prompt (SGLang's: `system`
// joined before it, no chat template). `options` become sampling fields (num_predict
// max_tokens, 2048 when absent as SGLang sets it, a negative one no limit but the context;
// repeat_penalty repetition_penalty); `stream` is true unless set false. Options and fields this
// server cannot honour (images, num_ctx, template, ...) are refused by name, never ignored.
#pragma once

#include <string_view>

#include "core/status.h"
#include "server/openai_types.h"

namespace sgl::server {

Result<ChatRequest> parse_ollama_chat(std::string_view body, const SamplingInput& defaults = {});

// A generate request whose prompt is empty or blank (Ollama's CLI sends one to load a model) has
// no prompts: its reply is an empty, finished one.
Result<CompletionRequest> parse_ollama_generate(std::string_view body,
                                                const SamplingInput& defaults = {});

// POST /api/embed (an embedding model's): `input` a string or a list of them; `truncate` (true
// unless false) cuts an input longer than the context to fit, false refuses it; `dimensions`
// keeps the first that many values (then normalized, as Ollama does); keep_alive any; model
// options do not apply to embeddings and are refused unless empty.
struct OllamaEmbedRequest {
  EmbeddingRequest embedding;  // no inputs: the older route's empty prompt
  bool truncate = true;
  bool legacy = false;  // POST /api/embeddings: the model's own vector as `embedding`
};
Result<OllamaEmbedRequest> parse_ollama_embed(std::string_view body);
// POST /api/embeddings (Ollama's older route): one `prompt` (empty: an empty vector), the vector
// as the model gives it (not normalized), cut to the context as /api/embed's truncate.
Result<OllamaEmbedRequest> parse_ollama_embeddings(std::string_view body);

}  // namespace sgl::server
