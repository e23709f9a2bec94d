// libFuzzer target: the server's JSON request parsers (server/openai_json.h, anthropic_json.h,
// responses_json.h, ollama_json.h). The first byte picks the route ('0' chat, '1' completions,
// '2' /generate, '3' /tokenize, '4' /detokenize, '5' /abort_request, '6' /v1/messages,
// '7' /v1/responses, '8' /api/chat, '9' /api/generate; any byte b: (b - '0') mod 10); the rest is
// the body. A parsed request must respect the limits the parsers promise; a rejected one must say
// why.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/check.h"
#include "server/anthropic_json.h"
#include "server/ollama_json.h"
#include "server/openai_json.h"
#include "server/responses_json.h"

namespace sgl::server {
namespace {

void check_error(const Status& status) {
  SGL_CHECK(status.code() == StatusCode::kInvalidArgument ||
            status.code() == StatusCode::kUnimplemented)
      << status.to_string();
  SGL_CHECK(!status.message().empty()) << "an error without a message";
}

void check_sampling(const SamplingInput& s) {
  SGL_CHECK(s.temperature >= 0 && s.top_p > 0 && s.top_p <= 1 && s.top_k >= -1);
  SGL_CHECK(s.min_p >= 0 && s.min_p <= 1 && s.n >= 1 && s.n <= kMaxChoices);
  SGL_CHECK(s.repetition_penalty > 0 && s.repetition_penalty <= 2);
  SGL_CHECK(s.presence_penalty >= -2 && s.presence_penalty <= 2);
  SGL_CHECK(s.frequency_penalty >= -2 && s.frequency_penalty <= 2);
  SGL_CHECK(s.min_tokens >= 0 &&
            (!s.max_tokens || (*s.max_tokens >= 0 && s.min_tokens <= *s.max_tokens)));
  for (const auto& [id, bias] : s.logit_bias) {
    SGL_CHECK(id >= 0 && bias != 0 && bias >= -100 && bias <= 100);
  }
  for (int32_t id : s.stop_token_ids) SGL_CHECK_GE(id, 0);
}

void check_prompts(const std::vector<PromptInput>& prompts, int64_t n) {
  SGL_CHECK(!prompts.empty());
  SGL_CHECK_LE(static_cast<int64_t>(prompts.size()) * n, kMaxBatchPrompts);
  for (const PromptInput& p : prompts) {
    for (int32_t id : p.ids) SGL_CHECK_GE(id, 0);
  }
}

// The chat template parses these strings again: they must be JSON of the right shape.
void check_json(const std::string& text, bool (nlohmann::json::*is_kind)() const) {
  if (text.empty()) return;
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  SGL_CHECK(!j.is_discarded() && (j.*is_kind)()) << text;
}

template <typename T>
bool failed(const Result<T>& r) {
  if (r.ok()) return false;
  check_error(r.status());
  return true;
}

}  // namespace
}  // namespace sgl::server

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sgl::server;
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  // The route digits map to 0..9, ':' to 10, ';' to 11.
  const int route = static_cast<uint8_t>(data[0] - '0') % 12;
  switch (route) {
    case 0: {
      const auto r = parse_chat_request(body);
      if (failed(r)) break;
      check_sampling(r->sampling);
      check_json(r->messages_json, &nlohmann::json::is_array);
      check_json(r->tools_json, &nlohmann::json::is_array);
      check_json(r->template_kwargs_json, &nlohmann::json::is_object);
      SGL_CHECK(r->top_logprobs >= 0 && r->top_logprobs <= kMaxTopLogprobs);
      break;
    }
    case 1: {
      const auto r = parse_completion_request(body);
      if (failed(r)) break;
      check_sampling(r->sampling);
      check_prompts(r->prompts, r->sampling.n);
      SGL_CHECK(r->sampling.max_tokens.has_value());
      SGL_CHECK(!r->logprobs || (*r->logprobs >= 0 && *r->logprobs <= kMaxTopLogprobs));
      break;
    }
    case 2: {
      const auto r = parse_generate_request(body);
      if (failed(r)) break;
      check_sampling(r->sampling);
      check_prompts(r->prompts, r->sampling.n);
      SGL_CHECK(r->top_logprobs_num >= 0 && r->logprob_start_len >= -1);
      break;
    }
    case 3: {
      const auto r = parse_tokenize_request(body);
      if (failed(r)) break;
      SGL_CHECK(!r->prompts.empty() && static_cast<int64_t>(r->prompts.size()) <= kMaxBatchPrompts);
      break;
    }
    case 4: {
      const auto r = parse_detokenize_request(body);
      if (failed(r)) break;
      for (int32_t id : r->tokens) SGL_CHECK_GE(id, 0);
      break;
    }
    case 5: {
      const auto r = parse_abort_request(body);
      if (failed(r)) break;
      SGL_CHECK(!r->rid.empty() || r->abort_all);
      break;
    }
    case 6: {
      const auto r = parse_messages_request(body);
      if (failed(r)) break;
      check_sampling(r->sampling);
      check_json(r->messages_json, &nlohmann::json::is_array);
      break;
    }
    case 8: {
      const auto r = parse_ollama_chat(body);
      if (failed(r)) break;
      check_sampling(r->sampling);
      check_json(r->messages_json, &nlohmann::json::is_array);
      check_json(r->tools_json, &nlohmann::json::is_array);
      check_json(r->template_kwargs_json, &nlohmann::json::is_object);
      SGL_CHECK(r->sampling.n == 1);
      break;
    }
    case 9: {
      const auto r = parse_ollama_generate(body);
      if (failed(r)) break;
      check_sampling(r->sampling);
      if (!r->prompts.empty()) check_prompts(r->prompts, r->sampling.n);
      SGL_CHECK(r->sampling.max_tokens || r->sampling.default_max_tokens ||
                r->sampling.max_tokens_unbounded);
      break;
    }
    case 10:
    case 11: {
      const auto r = route == 11 ? parse_ollama_embeddings(body) : parse_ollama_embed(body);
      if (failed(r)) break;
      SGL_CHECK(r->legacy == (route == 11) && (r->legacy || !r->embedding.inputs.empty()));
      for (const PromptInput& p : r->embedding.inputs) SGL_CHECK(p.is_text && !p.text.empty());
      SGL_CHECK(!r->embedding.dimensions || *r->embedding.dimensions >= 1);
      break;
    }
    default: {
      const auto r = parse_responses_request(body);
      if (failed(r)) break;
      check_sampling(r->chat.sampling);
      check_json(r->chat.messages_json, &nlohmann::json::is_array);
      check_json(r->metadata_json, &nlohmann::json::is_object);
      SGL_CHECK(r->chat.sampling.n == 1 && r->chat.sampling.max_tokens == r->max_output_tokens);
      break;
    }
  }
  return 0;
}
