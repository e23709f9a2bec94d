// serve(): runs the OpenAI-compatible server over a started engine until SIGINT/SIGTERM, then
// drains — stops accepting, lets in-flight requests finish within the drain timeout, aborts
// the rest (they end with finish_reason "abort") and closes every connection.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "core/status.h"
#include "engine/load_balance.h"
#include "engine/model_engine.h"
#include "grammar/json_schema_compiler.h"
#include "server/api_options.h"
#include "server/cors.h"
#include "server/metrics.h"
#include "server/request_logger.h"
#include "tokenizer/tokenizer.h"

namespace sgl::server {

struct ServeOptions {
  std::string model_path;
  std::string served_model_name;  // empty: model_path
  std::string host = "127.0.0.1";
  int port = 30000;
  std::string api_key;                // empty: no authentication
  std::string admin_api_key;          // --admin-api-key (api_auth.h); empty: none
  std::string chat_template_path;     // empty: the tokenizer's template, if any
  std::string hf_chat_template_name;  // --hf-chat-template-name: the tokenizer's named template
  std::string tool_call_parser;       // --tool-call-parser (checked); empty: none
  std::string reasoning_parser;       // --reasoning-parser (checked); empty: none
  // --constrained-json-whitespace-pattern; none: constrained JSON is compact.
  std::optional<grammar::JsonWhitespacePattern> json_whitespace_pattern;
  std::string grammar_backend = "xgrammar";  // --grammar-backend ("none": constraints refused)
  int http_threads = 4;
  std::chrono::milliseconds http_read_timeout{30'000};
  std::chrono::milliseconds drain_timeout{10'000};
  std::string device;                  // reported by /get_server_info
  RequestLogSettings request_log;      // --log-requests and its level, format and targets
  bool enable_response_store = false;  // --enable-response-store
  // SGLang's server warm-up (off with --skip-server-warmup): on CUDA, one request through each
  // replica before the port opens (server_warmup.h).
  bool warmup = true;
  // SGLang's SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION: /health probes the engine as
  // /health_generate does (SGLang's default); false: /health answers 200 while the server runs.
  bool health_generates = true;
  // SGLang's SGLANG_HEALTH_CHECK_TIMEOUT: how long /health_generate waits for the engine to make
  // progress before it answers 503 and marks the server unhealthy.
  double health_check_timeout_s = 20;
  MetricsOptions metrics;      // SGLang's --bucket-* and --extra-metric-labels
  std::string tokenizer_path;  // reported by /get_model_info; empty: model_path
  CorsPolicy cors;             // browser origins allowed
  // SGLang's --skip-tokenizer-init: no tokenizer; clients send and receive token ids, and what
  // needs text is refused (serve()'s `tokenizer` is null).
  bool skip_tokenizer_init = false;
  bool enable_return_hidden_states = false;  // ServerInfo's
  // --sampling-defaults model: requests start from the model's generation_config.json sampling
  // values (SGLang's default); false: OpenAI's.
  bool model_sampling_defaults = true;
  // SGLang's --preferred-sampling-params (JSON object text; empty: none): sampling defaults over
  // those, for every route.
  std::string preferred_sampling_params;
  std::string default_chat_template_kwargs;  // a JSON object (ServerInfo's); empty: none
  ApiOptions api;                            // ServerInfo's
  engine::EngineOptions engine;              // reported by /get_server_info
  // How requests are spread over the replicas (--load-balance-method; dp > 1 only).
  engine::LoadBalanceMethod load_balance_method = engine::LoadBalanceMethod::kRoundRobin;
};

// `replicas`: the started engines of --dp-size (one or more; launch_data_parallel_engines), all
// of one model. `tokenizer`: the model's, or null with options.skip_tokenizer_init. `on_ready`
// runs once the server listens, with its URL. Returns when drained (OK), or the startup error
// (chat template, port binding).
Status serve(const ServeOptions& options, std::span<engine::ModelEngine> replicas,
             const tokenizer::Tokenizer* tokenizer,
             const std::function<void(const std::string& url)>& on_ready);

}  // namespace sgl::server
