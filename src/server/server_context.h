// ServerContext: what every handler shares — the engine replicas, the tokenizer, the chat template,
// static facts about the server, metrics, the in-flight request registry and the work pool.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/data_parallel_controller.h"
#include "grammar/json_schema_compiler.h"
#include "model/lora_adapter.h"
#include "scheduler/priority.h"
#include "server/api_auth.h"
#include "server/api_options.h"
#include "server/background_responses.h"
#include "server/grammar_backend.h"
#include "server/lora_registry.h"
#include "server/metrics.h"
#include "server/openai_types.h"
#include "server/request_logger.h"
#include "server/request_registry.h"
#include "server/response_store.h"
#include "server/session_store.h"
#include "server/work_pool.h"
#include "tokenizer/chat_template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace sgl::engine {
struct ModelEngine;
}  // namespace sgl::engine

namespace sgl::server {

// What /version and /get_server_info report.
inline constexpr std::string_view kServerVersion = "sgl.cpp-0.1";

// Where a MoE model's routed experts sit in SGLang's routed_experts layout ([positions,
// num_layers, top_k]; the dense layers' entries 0).
struct RoutedExpertsLayout {
  int64_t num_layers = 0;              // the model's layers; 0: not served
  std::vector<int64_t> sparse_layers;  // the MoE layers, ascending (the runner's order)
  int64_t top_k = 0;
};

// Facts reported by /v1/models, /get_model_info and /get_server_info.

struct ServerInfo {
  std::string model_path;
  std::string tokenizer_path;
  std::string served_model_name;
  std::string host;
  int port = 0;
  int64_t context_length = 0;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  // A classification or reward model's output labels in id order (config.json's id2label): its
  // embeddings are their scores (/classify, /v1/classify). Empty for other models.
  std::vector<std::string> labels;
  // false: an embedding model (--is-embedding) serving /v1/embeddings and /encode only.
  bool is_generation = true;
  std::string architecture;
  std::string model_type;
  // --preferred-sampling-params as given (a JSON object); empty: none.
  std::string preferred_sampling_params;
  // --default-chat-template-kwargs (a checked JSON object): what a chat request's
  // chat_template_kwargs leaves unset, filled in as the prompt is rendered; empty: none.
  std::string default_chat_template_kwargs;
  // Its enable_thinking, for a request that sets none.
  std::optional<bool> default_enable_thinking;
  ApiOptions api;  // SGLang's flags for how requests are taken and answered
  std::string device;
  int64_t created = 0;  // unix seconds at startup
  int32_t max_running_requests = 0;
  int64_t max_prefill_tokens = 0;
  int64_t chunked_prefill_size = 0;
  int64_t max_queued_requests = 0;
  std::string schedule_policy;
  bool disable_radix_cache = false;
  scheduler::PriorityOptions priority;  // --enable-priority-scheduling and its flags
  bool has_chat_template = false;
  // --skip-tokenizer-init: the tokenizer is an IdsOnlyTokenizer; the Router refuses the text
  // routes and the handlers text prompts and text-only fields.
  bool skip_tokenizer_init = false;
  // --enable-return-hidden-states: return_hidden_states is served (else a 400).
  bool enable_return_hidden_states = false;
  // --enable-return-routed-experts (a MoE model): return_routed_experts is served (else a 400).
  RoutedExpertsLayout routed_experts;
  // --enable-lora / --lora-paths: requests may name these adapters (lora_path, or the OpenAI
  // model "base:adapter"), numbered from 1 in this order as the engine's, and those
  // /load_lora_adapter loads (ServerContext::lora); --max-loaded-loras (0: no bound).
  bool enable_lora = false;
  std::vector<model::LoraAdapterPath> lora_adapters;
  int64_t max_loaded_loras = 0;
  std::string chat_template_origin;    // the --chat-template path, or where the tokenizer's is
  RequestLogSettings request_log;      // --log-requests' at start (ServerContext::request_log)
  bool health_generates = true;        // /health probes the engine (ServeOptions')
  double health_check_timeout_s = 20;  // a probe's wait for the engine (ServeOptions')
  MetricsOptions metrics;              // --bucket-*, --*-tokens-buckets, --extra-metric-labels
  bool enable_response_store = false;  // --enable-response-store (SGLang's)
  std::string tool_call_parser;        // --tool-call-parser; empty: tool calls stay text
  std::string reasoning_parser;        // --reasoning-parser; empty: reasoning stays text
  // --constrained-json-whitespace-pattern: the whitespace of JSON-constrained output; none: the
  // compact default (grammar::JsonWhitespace::kCompact).
  std::optional<grammar::JsonWhitespacePattern> json_whitespace_pattern;
  // --grammar-backend as given (SGLang's name; "none" refuses constraints). Every other name
  // runs on sgl.cpp's own grammar engine.
  std::string grammar_backend = "xgrammar";
  // Strict tools under tool_choice auto are held by a grammar: the parser's call marker can be
  // written by the model (it has one, and it is not a special token the grammar cannot allow).
  bool strict_auto_tools = false;
  int dp_size = 1;                         // --dp-size: engine replicas
  int tp_size = 1;                         // --tp-size: tensor-parallel ranks of each replica
  int ep_size = 1;                         // --ep-size: expert-parallel groups of those ranks
  std::string load_balance_method;         // --load-balance-method (SGLang's name)
  std::string load_format = "auto";        // --load-format
  std::string kv_cache_dtype = "auto";     // --kv-cache-dtype
  bool enable_memory_saver = false;        // --enable-memory-saver
  bool enable_weights_cpu_backup = false;  // --enable-weights-cpu-backup

  // An embedding model's vector size: its labels' scores, else its hidden states.
  int64_t embedding_size() const {
    return labels.empty() ? hidden_size : static_cast<int64_t>(labels.size());
  }
};

// What /release_memory_occupation holds besides what the runners say is released (their
// weights and KV cache): SGLang's "cuda_graph" tag, which names no memory here, and whether the
// release paused generation (then the resume of the last tag continues it). Guarded by
// ServerContext::generation_control.
struct ReleasedMemory {
  bool cuda_graph = false;
  bool paused_generation = false;
};

// The checkpoint the weights came from and their version (SGLang's weight_version, "default"
// until an update names one), which /update_weights_from_disk and /update_weight_version
// change. Thread-safe.
class ServedWeights {
 public:
  explicit ServedWeights(std::string path) : path_(std::move(path)) {}
  std::string path() const {
    std::lock_guard lock(mutex_);
    return path_;
  }
  std::string version() const {
    std::lock_guard lock(mutex_);
    return version_;
  }
  // An update from `path`; `version` replaces the version unless empty (SGLang keeps it then).
  void updated(std::string path, std::string version) {
    std::lock_guard lock(mutex_);
    path_ = std::move(path);
    if (!version.empty()) version_ = std::move(version);
  }
  void set_version(std::string version) {
    std::lock_guard lock(mutex_);
    version_ = std::move(version);
  }

 private:
  mutable std::mutex mutex_;
  std::string path_;
  std::string version_ = "default";
};

// How the server's JSON constraints shape their JSON.
inline grammar::JsonSchemaOptions json_options(const ServerInfo& info) {
  grammar::JsonSchemaOptions options;
  options.whitespace_pattern = info.json_whitespace_pattern;
  return options;
}

// Why this server refuses every grammar (GrammarBackend's refusal); empty: it compiles them.
inline std::string grammar_refusal(const ServerInfo& info) {
  if (info.grammar_backend == "none") {
    return "grammar-based generation (json_schema, regex, ebnf, structural_tag) is not supported "
           "when the server is launched with --grammar-backend none";
  }
  if (info.skip_tokenizer_init) {
    return "a grammar needs the tokenizer's vocabulary, which this server does not load "
           "(--skip-tokenizer-init)";
  }
  return {};
}

struct ServerContext {
  ServerContext(engine::DataParallelController& engine_in, const tokenizer::Tokenizer& tokenizer_in,
                const tokenizer::ChatTemplate* chat_template_in, ServerInfo info_in,
                ApiAuth auth_in, WorkPool& pool_in, WorkPool& admin_pool_in)
      : engine(engine_in),
        tokenizer(tokenizer_in),
        chat_template(chat_template_in),
        info(std::move(info_in)),
        auth(std::move(auth_in)),
        metrics(info.served_model_name, info.metrics),
        pool(pool_in),
        admin_pool(admin_pool_in),
        grammar(tokenizer_in, engine_in.options().vocab_size, engine_in.options().eos_token_ids,
                json_options(info), grammar_refusal(info)) {}

  // The engine replicas (--dp-size; one: a pass-through to it), used as one engine: requests
  // are routed, aborts reach their replica, stats are summed. Outlives the context.
  engine::DataParallelController& engine;
  const tokenizer::Tokenizer& tokenizer;         // outlives the context
  const tokenizer::ChatTemplate* chat_template;  // null: chat completions are refused
  const ServerInfo info;
  const ApiAuth auth;  // --api-key and --admin-api-key
  // What a request's sampling starts from (SamplingInput's own defaults are OpenAI's).
  SamplingInput sampling_defaults;
  Metrics metrics;
  RequestRegistry registry;
  WorkPool& pool;  // chat templates and tokenization run here, not on the I/O threads
  // Endpoints that wait on the engine loops (stats, a cache flush) run here: neither an I/O
  // thread nor behind a queue of slow renders.
  WorkPool& admin_pool;
  GrammarBackend grammar;  // structured output: requests' grammars compiled for the model
  // --enable-response-store: finished Responses kept for GET /v1/responses/{id} and
  // previous_response_id (empty, unused, without the flag).
  ResponseStore response_store{kResponseStoreBytes};
  SessionStore sessions;  // SGLang's /open_session and /generate's session_params
  // The LoRA adapters served now: the start's, then /load_lora_adapter's and
  // /unload_lora_adapter's changes.
  LoraRegistry lora{info.enable_lora, info.lora_adapters, info.max_loaded_loras};
  // The latest /health_generate found the engine making no progress (SGLang's
  // ServerStatus.UnHealthy): /ping and /ready answer 503 until a probe finds it moving again.
  std::atomic<bool> unhealthy{false};
  // --log-requests, and as /configure_logging sets it since: lines per request.
  RequestLogger request_log{info.request_log};
  // The replicas' models, for /update_weights_from_disk (serve() sets them; empty: the route
  // has no model to update). Outlive the context.
  std::span<engine::ModelEngine> model_engines;
  ServedWeights weights{info.model_path};
  // Held by /pause_generation, /continue_generation, /update_weights_from_disk and the memory
  // occupation routes: one at a time, so no continue resumes the engine while an update writes
  // the weights or while memory is released.
  std::mutex generation_control;
  ReleasedMemory released_memory;
  // The Responses API's background replies, driven to their end without a connection. Last:
  // destroyed first, while what the replies use (registry, engines) is still here.
  BackgroundResponses background_responses;
};

}  // namespace sgl::server
