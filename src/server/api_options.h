// ApiOptions: SGLang's launch flags for how the server takes and answers requests.
#pragma once

#include <cstdint>
#include <optional>

#include "server/completion_template.h"

namespace sgl::server {

// SGLang's flags for how requests are taken and answered.
struct ApiOptions {
  // --stream-response-default-include-usage: streams end with a usage chunk unasked.
  bool stream_default_include_usage = false;
  // --enable-cache-report: OpenAI usage objects give prompt_tokens_details.cached_tokens.
  bool enable_cache_report = false;
  // --incremental-streaming-output (--stream-output): /generate streams each chunk's new text,
  // output_ids and output logprobs, not everything so far.
  bool incremental_streaming_output = false;
  // --stream-interval: a stream sends a choice's tokens once this many are new (the first and
  // the last at once).
  int64_t stream_interval = 1;
  // --allow-auto-truncate: a prompt past the context keeps its first context - 1 tokens, and
  // max_tokens past the room left is cut to it, instead of a 400.
  bool allow_auto_truncate = false;
  // --completion-template: /v1/completions' suffix (fill in the middle) with these markers;
  // none: a suffix is refused.
  std::optional<CompletionTemplate> completion_template;
};

}  // namespace sgl::server
