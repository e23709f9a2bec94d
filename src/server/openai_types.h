// Typed API requests (OpenAI and SGLang-native), parsed from JSON by openai_json.cpp. Fields
// keep the API's names; ranges are checked at parse time, model-dependent limits later.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "function_call/function_tools.h"
#include "grammar/grammar_kind.h"

namespace sgl::server {

// Most prompts / choices one request may ask for (OpenAI's limit on an embeddings input list).
constexpr int64_t kMaxBatchPrompts = 2048;
constexpr int64_t kMaxChoices = 128;     // n
constexpr int64_t kMaxTopLogprobs = 20;  // OpenAI's limit (logprobs, top_logprobs)

// SGLang's return_hidden_states: false, true (every position) or "last" (the last position's
// row alone).
enum class HiddenStatesMode : uint8_t { kNone, kAll, kLast };

// SGLang's return_routed_experts and routed_experts_start_len (with
// --enable-return-routed-experts): each MoE layer's top-k expert ids at the positions from
// start_len to the last output token fed back.
struct RoutedExpertsInput {
  bool asked = false;
  int64_t start_len = 0;  // in [0, the prompt's length]
};

// SGLang's fields an OpenAI reply answers in its sglext object (sglext_json.h).
struct SglextFields {
  RoutedExpertsInput routed_experts;
  bool cached_tokens_details = false;  // return_cached_tokens_details
  bool spec_tokens_details = false;    // return_spec_tokens_details
};

// A prompt as text or as token ids.
struct PromptInput {
  bool is_text = false;
  std::string text;
  std::vector<int32_t> ids;
};

// Structured output: the grammar every generated token must follow.
struct GrammarInput {
  grammar::GrammarKind kind = grammar::GrammarKind::kJsonObject;
  std::string source;  // the schema's JSON text, the pattern or the EBNF; empty for json_object
  std::string field;   // the request field it came from, named in errors
};

// SGLang's session_params (sessions: session_store.h).
struct SessionParams {
  std::string id;
  std::optional<std::string> rid;  // the request to continue (or replace); none: a new root
  int64_t offset = 0;              // nonzero: the history cut to [:offset] before the prompt
  bool replace = false;
  bool drop_previous_output = false;
};

// SGLang's request id, replica and prefix cache namespace, which every generation route reads
// alike.
struct RequestRouting {
  std::string rid;                        // the client's request id; empty: one is made up
  std::vector<std::string> rids;          // /generate's rid as a list: one per prompt of a batch
  std::optional<int64_t> routed_dp_rank;  // the engine replica to run on; none: load balanced
  std::optional<int64_t> priority;        // SGLang's priority (--enable-priority-scheduling)
  // extra_key and cache_salt as one engine namespace (openai_json.cpp): one for every
  // prompt, or (lists on /generate) one per prompt of a batch; none: the default namespace.
  std::vector<std::string> cache_namespaces;
  // SGLang's lora_path: the LoRA adapter's name for every prompt, or (a list on /generate) one
  // per prompt of a batch, none where null; empty: none given. The OpenAI routes' model
  // "base:adapter" names one too (server/lora_request.h resolves them).
  std::vector<std::optional<std::string>> lora_paths;

  std::string cache_namespace_of(size_t prompt) const {
    if (cache_namespaces.empty()) return {};
    return cache_namespaces[cache_namespaces.size() == 1 ? 0 : prompt];
  }
  std::optional<std::string> lora_path_of(size_t prompt) const {
    if (lora_paths.empty()) return std::nullopt;
    return lora_paths[lora_paths.size() == 1 ? 0 : prompt];
  }
};

// Sampling and stopping fields shared by the generation endpoints (SGLang's semantics).
struct SamplingInput {
  double temperature = 1.0;
  double top_p = 1.0;
  int64_t top_k = -1;
  double min_p = 0.0;
  std::optional<int64_t> max_tokens;  // max_tokens / max_completion_tokens / max_new_tokens
  // The name the client gave that limit, for the errors about it (max_output_tokens on
  // /v1/responses); a string literal.
  const char* max_tokens_field = "max_tokens";
  // --preferred-sampling-params' max_new_tokens: where a request gives none, a default cut to
  // the room its prompt leaves (as a route's own default), not a limit checked against it.
  std::optional<int64_t> default_max_tokens;
  // sampling_params' max_new_tokens was null: no limit but the context, over any default
  // (SGLang's None).
  bool max_tokens_unbounded = false;
  std::optional<int64_t> seed;
  std::vector<std::string> stop;
  std::vector<std::string> stop_regex;  // Python `re` patterns (SGLang's stop_regex)
  bool no_stop_trim = false;            // keep the matched stop string / token's text
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  bool skip_special_tokens = true;
  int64_t n = 1;
  // Logit processing (range-checked here; token ids against the vocabulary later).
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  double repetition_penalty = 1.0;
  int64_t min_tokens = 0;                              // min_tokens / min_new_tokens
  std::vector<std::pair<int64_t, double>> logit_bias;  // (token id, bias); zero biases dropped
  // json_schema / regex / ebnf (SGLang), response_format (OpenAI), guided_* (vLLM); compiled
  // for the model when the request is built.
  std::optional<GrammarInput> grammar;
};

// POST /v1/completions
struct CompletionRequest {
  std::optional<std::string> model;
  std::vector<PromptInput> prompts;
  SamplingInput sampling;
  bool echo = false;
  std::optional<int64_t> logprobs;  // top-k per token; 0 = the chosen token only
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
  bool continuous_usage = false;  // stream_options.continuous_usage_stats (vLLM)
  RequestRouting routing;
  std::string suffix;  // the text after the completion (text prompts; --completion-template)
  // SGLang's return_token_ids: each choice lists token_ids (its output) and prompt_token_ids.
  bool return_token_ids = false;
  HiddenStatesMode return_hidden_states = HiddenStatesMode::kNone;  // each choice's hidden_states
  SglextFields sglext;  // the reply's sglext (its first choice's)
};

// OpenAI's tool_choice.
enum class ToolChoiceMode : uint8_t {
  kNone,      // no calls: the template does not see the tools, nothing is parsed
  kAuto,      // the model decides; calls are parsed (--tool-call-parser)
  kRequired,  // at least one call of some tool
  kNamed,     // a call of tool_choice_name
};

// POST /v1/chat/completions
struct ChatRequest {
  std::optional<std::string> model;
  std::string messages_json;  // the messages as the template sees them (text content)
  // SGLang's input_ids: the prompt already rendered and tokenized, used instead of the
  // template's rendering of `messages`.
  std::optional<std::vector<int32_t>> input_ids;
  // What the chat template sees: empty when no tools (none given, or tool_choice "none"); only
  // the named one for a named tool_choice.
  std::string tools_json;
  std::vector<function_call::FunctionTool> tools;  // checked (schemas compile)
  ToolChoiceMode tool_choice = ToolChoiceMode::kAuto;
  std::string tool_choice_name;  // kNamed: a function in `tools`
  bool parallel_tool_calls = true;
  std::string template_kwargs_json;  // chat_template_kwargs; empty: none
  // SGLang's: reasoning in reasoning_content (with --reasoning-parser); false: left in content.
  bool separate_reasoning = true;
  bool stream_reasoning = true;  // SGLang's: false streams the reasoning in one chunk at its end
  std::optional<bool> enable_thinking;  // chat_template_kwargs.enable_thinking
  // Thinking asked on (true) or off (false) by the Responses API's reasoning.effort or the
  // Messages API's thinking.type (both also set enable_thinking); the route checks the server can
  // honour it (thinking_switch.h).
  std::optional<bool> thinking;
  // Messages' thinking.budget_tokens: the most tokens the reasoning may take. Where the reasoning
  // is read between tags its closing tag is then forced and the answer follows (submit_chat);
  // otherwise the reply ends there, stop reason max_tokens.
  std::optional<int64_t> max_reasoning_tokens;
  bool add_generation_prompt = true;
  // continue_final_message (SGLang's): the final assistant message's text, taken out of
  // messages_json; the template opens the assistant's turn and the prompt ends with this text,
  // which the model continues. nullopt: a new turn as usual.
  std::optional<std::string> assistant_prefix;
  SamplingInput sampling;
  bool logprobs = false;
  int64_t top_logprobs = 0;
  bool stream = false;
  bool include_usage = false;
  bool continuous_usage = false;
  RequestRouting routing;
  // SGLang's (not streamed): return_prompt_token_ids lists each choice's prompt_token_ids;
  // return_token_ids those and its response_token_ids.
  bool return_prompt_token_ids = false;
  bool return_token_ids = false;
  HiddenStatesMode return_hidden_states = HiddenStatesMode::kNone;  // each choice's hidden_states
  SglextFields sglext;  // the reply's sglext (its first choice's)
};

// POST /generate (SGLang native)
struct GenerateInput {
  std::vector<PromptInput> prompts;
  bool batch = false;      // text / input_ids was a list of prompts: answer a list
  SamplingInput sampling;  // every prompt's; the first prompt's when given per prompt
  // sampling_params as a list (SGLang's): one per prompt, the same n in each; else empty.
  std::vector<SamplingInput> per_prompt_sampling;
  const SamplingInput& sampling_of(size_t prompt) const {
    return per_prompt_sampling.empty() ? sampling : per_prompt_sampling[prompt];
  }
  bool stream = false;
  bool return_logprob = false;
  int64_t top_logprobs_num = 0;
  int64_t logprob_start_len = -1;  // prompt logprobs from this position; -1: none
  bool return_text_in_logprobs = false;
  // SGLang's token_ids_logprob: one list for every prompt, or one per prompt; nullopt when not
  // given or [] (SGLang's None).
  std::optional<std::vector<std::vector<int32_t>>> token_ids_logprob;
  RequestRouting routing;
  bool no_logs = false;  // SGLang's: not in --log-requests' lines
  // SGLang's: the output starts inside the reasoning; a grammar holds after it (reasoning_gate.h).
  bool require_reasoning = false;
  // SGLang's max_thinking_tokens: the most tokens the reasoning may take before its closing tag
  // is forced (reasoning_gate.h).
  std::optional<int64_t> max_thinking_tokens;
  // SGLang's session_params: the request is a turn of an open session (session_store.h).
  std::optional<SessionParams> session;
  // SGLang's return_hidden_states (with --enable-return-hidden-states): meta_info.hidden_states.
  HiddenStatesMode return_hidden_states = HiddenStatesMode::kNone;
  bool return_prompt_token_ids = false;  // SGLang's: each item lists prompt_token_ids
  RoutedExpertsInput routed_experts;     // each item's meta_info.routed_experts
};

// What SGLang's pooling requests (/v1/embeddings, /encode, /v1/classify) say of their routing.
struct PoolingRouting {
  std::string rid;                  // the client's request id; empty: one is made up
  std::optional<int64_t> priority;  // SGLang's priority (--enable-priority-scheduling)
};

// POST /v1/embeddings (an embedding model's; embeddings_json.h)
struct EmbeddingRequest {
  std::optional<std::string> model;
  std::vector<PromptInput> inputs;
  bool base64 = false;  // encoding_format "base64": each vector as little-endian f32 bytes
  // OpenAI's output size; only the model's own is served (no Matryoshka truncation).
  std::optional<int64_t> dimensions;
  PoolingRouting routing;  // SGLang's fields (Ollama's /api/embed has none)
};

// POST /encode (SGLang native; embeddings_json.h)
struct EncodeInput {
  std::vector<PromptInput> prompts;
  bool batch = false;  // text / input_ids was a list of prompts: answer a list
  PoolingRouting routing;
};

// POST /tokenize
struct TokenizeInput {
  std::vector<std::string> prompts;
  bool batch = false;
  bool add_special_tokens = true;
};

// POST /detokenize
struct DetokenizeInput {
  std::vector<int32_t> tokens;
  bool skip_special_tokens = true;
};

// POST /abort_request
struct AbortInput {
  std::string rid;
  bool abort_all = false;
};

}  // namespace sgl::server
