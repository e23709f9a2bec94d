// sgl-server: the OpenAI-compatible HTTP server (flags, model loading; the rest is server/).
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "app/cli_args.h"
#include "app/config_file.h"
#include "app/engine_flags.h"
#include "app/flag_spec.h"
#include "app/omp_wait_policy.h"
#include "app/sglang_flags.h"
#include "core/logging.h"
#include "engine/data_parallel_launch.h"
#include "engine/load_balance.h"
#include "function_call/output_parser.h"
#include "grammar/json_schema_compiler.h"
#include "model/model_source.h"
#include "server/chat_template_loader.h"
#include "server/openai_json.h"
#include "server/request_json.h"
#include "server/serve.h"
#include "server/termination_signals.h"
#include "tokenizer/tokenizer.h"

namespace sgl::app {
namespace {

// sgl-server's own flags (SGLang's names where SGLang has the flag).
std::span<const FlagSpec> server_flag_table() {
  static const std::vector<FlagSpec> table = {
      {.name = "--model-path",
       .aliases = {"--model"},
       .value = "PATH",
       .help = "A Hugging Face model directory (config.json, *.safetensors, tokenizer.json) or a "
               ".gguf file. Required."},
      {.name = "--tokenizer-path",
       .value = "PATH",
       .help = "Where the tokenizer and chat template come from.",
       .default_value = "--model-path"},
      {.name = "--skip-tokenizer-init",
       .help = "Load no tokenizer (SGLang's): clients send token ids (/generate's input_ids) and "
               "read output_ids, without text; text prompts, stop strings, grammars and the "
               "routes that read or write text answer 400. EOS ids come from the model's "
               "config.json and generation_config.json."},
      {.name = "--enable-return-hidden-states",
       .help = "Serve return_hidden_states (SGLang's; true or \"last\"): /generate's "
               "meta_info.hidden_states holds the final norm's output at each prompt position "
               "(one list) and then at each output token fed back; /v1/completions' and "
               "/v1/chat/completions' choices hold the last such row. Such requests compute "
               "their whole prompt (no prefix cache match), run without CUDA graphs and decode "
               "without drafts."},
      {.name = "--config",
       .value = "FILE",
       .help = "A YAML file of these flags (model-path: DIR, port: 30000, enable-metrics: "
               "true); the command line overrides it."},
      {.name = "--host",
       .value = "ADDR",
       .help = "Address to listen on.",
       .default_value = "127.0.0.1"},
      {.name = "--port",
       .value = "N",
       .help = "Port to listen on (0: any free).",
       .default_value = "30000"},
      {.name = "--served-model-name",
       .value = "NAME",
       .help = "The model name /v1/models reports.",
       .default_value = "the model path"},
      {.name = "--api-key",
       .value = "KEY",
       .help = "The key every request must carry (Authorization: Bearer KEY, or x-api-key: KEY); "
               "health, readiness and metrics routes stay open."},
      {.name = "--admin-api-key",
       .value = "KEY",
       .help = "The key the administrative routes take instead of --api-key (SGLang's): weight "
               "updates and reads, /flush_cache, /abort_request, /pause_generation, "
               "/continue_generation, /configure_logging, /slow_down."},
      {.name = "--is-embedding",
       .help = "Serve an embedding model: /v1/embeddings and /encode, pooled as the model's "
               "sentence-transformers modules.json says (without one: last token, normalised); "
               "the generation routes answer 400."},
      {.name = "--chat-template",
       .value = "FILE",
       .help = "A Jinja chat template replacing the tokenizer's."},
      {.name = "--tool-call-parser",
       .value = "NAME",
       .help = "Parse tool calls out of chat replies when a request offers tools (SGLang's "
               "names): qwen25 / qwen / hermes, qwen3_coder, llama3, mistral, pythonic, "
               "deepseekv3, deepseekv31, gpt-oss."},
      {.name = "--reasoning-parser",
       .value = "NAME",
       .help = "Separate the reasoning into reasoning_content (SGLang's names): qwen3, "
               "qwen3-thinking, deepseek-r1, mistral, gpt-oss."},
      {.name = "--grammar-backend",
       .value = "xgrammar|outlines|llguidance|none",
       .help = "SGLang's grammar backends: none refuses constrained requests (400), as SGLang's; "
               "the others all run on sgl.cpp's own grammar engine (src/grammar).",
       .default_value = "xgrammar"},
      {.name = "--constrained-json-whitespace-pattern",
       .value = "REGEX",
       .help = "The whitespace JSON-constrained output may have wherever JSON allows it (e.g. "
               "'[\\n\\t ]*'), as SGLang's outlines and llguidance backends take it; without "
               "it, no whitespace but one optional space after ':' and ','."},
      {.name = "--allowed-origins",
       .value = "ORIGINS",
       .help = "Browser origins allowed to call the API (CORS): comma-separated "
               "(https://app.example:8080) or a JSON list; * allows every origin, as SGLang does.",
       .default_value = "*"},
      {.name = "--sampling-defaults",
       .value = "model|openai",
       .help = "model: a request's unset temperature, top_p, top_k, min_p and repetition_penalty "
               "come from the model's generation_config.json; openai: OpenAI's defaults.",
       .default_value = "model"},
      {.name = "--preferred-sampling-params",
       .value = "JSON",
       .help = "Server-wide sampling defaults over those (SGLang's): a JSON object of /generate "
               "sampling_params, e.g. '{\"temperature\": 0.7, \"max_new_tokens\": 512}', for "
               "the fields a request does not set, on every route."},
      {.name = "--default-chat-template-kwargs",
       .value = "JSON",
       .help = "Chat template kwargs for what a request's chat_template_kwargs leaves unset "
               "(SGLang's), e.g. '{\"enable_thinking\": false}'."},
      {.name = "--stream-response-default-include-usage",
       .help = "Streamed completions and chat completions end with a usage chunk even when "
               "stream_options does not ask for it (SGLang's)."},
      {.name = "--enable-cache-report",
       .help = "OpenAI usage objects report the prompt tokens served from the prefix cache "
               "(prompt_tokens_details.cached_tokens)."},
      {.name = "--incremental-streaming-output",
       .aliases = {"--stream-output"},
       .help = "/generate streams each chunk's new text, output_ids and output logprobs instead "
               "of everything so far."},
      {.name = "--stream-interval",
       .value = "N",
       .help = "A stream sends a choice's tokens once N are new (its first and last at once).",
       .default_value = "1"},
      {.name = "--hf-chat-template-name",
       .value = "NAME",
       .help = "Of the tokenizer's named chat templates (tokenizer_config.json's list: "
               "default, tool_use, rag, ...), the one to serve (unset: 'default', else the only "
               "one)."},
      {.name = "--completion-template",
       .value = "NAME|FILE",
       .help = "A code model's fill-in-the-middle markers for /v1/completions' suffix: "
               "deepseek_coder, star_coder, qwen_coder, or a JSON file of SGLang's fields (name, "
               "fim_begin_token, fim_middle_token, fim_end_token, fim_position MIDDLE or END)."},
      {.name = "--allow-auto-truncate",
       .help = "A prompt past the context keeps its first context - 1 tokens and max_tokens past "
               "the room left is cut to it, instead of a 400."},
      {.name = "--dp-size",
       .aliases = {"--dp", "--data-parallel-size"},
       .value = "N",
       .help = "Engine replicas behind this server (SGLang's data parallelism), each with its "
               "own scheduler, KV cache and copy of the weights: on the CPU each its own engine; "
               "on CUDA one GPU each from --base-gpu-id when there are that many, else all on "
               "that GPU with --mem-fraction-static split between them.",
       .default_value = "1"},
      {.name = "--load-balance-method",
       .value = "NAME",
       .help = "How requests are spread over the --dp-size replicas: round_robin, "
               "shortest_queue (fewest unfinished requests), minimum_tokens (fewest unfinished "
               "prompt tokens), cache_aware (the replica sent the longest prefix of the prompt "
               "before, unless it is overloaded; cold prompts to the least loaded). SGLang "
               "0.5's auto, total_requests and total_tokens name the first three.",
       .default_value = "round_robin"},
      {.name = "--http-threads", .value = "N", .help = "HTTP I/O threads.", .default_value = "4"},
      {.name = "--http-read-timeout",
       .value = "SECONDS",
       .help = "Time for a request's header; its body gets this plus its size at 256 KiB/s.",
       .default_value = "30"},
      {.name = "--drain-timeout",
       .value = "SECONDS",
       .help = "Time running requests get to finish after SIGINT / SIGTERM.",
       .default_value = "10"},
      {.name = "--skip-server-warmup",
       .help = "Open the port without the warm-up: on CUDA the server first sends a request of "
               "up to 256 prompt tokens through each replica (SGLang warms up with a short one), "
               "so that the first client does not pay the process's one-time costs (0.1 s and "
               "more)."},
      {.name = "--enable-response-store",
       .help = "Keep finished Responses (store, the default) in memory for GET / DELETE "
               "/v1/responses/{id} and previous_response_id, as SGLang's flag does; at most "
               "256 MiB, the oldest dropped first."},
      {.name = "--log-requests",
       .help = "Log each request as it reaches the engine and when it finishes (rid, prompt / "
               "completion / cached tokens, finish reason, latency), with the detail of "
               "--log-requests-level, whatever --log-level says."},
      {.name = "--log-requests-level",
       .value = "0-3",
       .help = "Detail of --log-requests (SGLang's): 0 metadata, 1 and sampling parameters, 2 "
               "and inputs / outputs cut to 2048 characters or entries (OpenAI-style bodies "
               "too), 3 all of them.",
       .default_value = "2"},
      {.name = "--log-requests-format",
       .value = "text|json",
       .help = "Lines of --log-requests as text or one JSON object each (SGLang's events "
               "request.received, request.finished, request.received.openai).",
       .default_value = "text"},
      {.name = "--log-requests-target",
       .value = "TARGET...",
       .help = "Where --log-requests writes: stdout and/or directories (each gets "
               "<hostname>_0.log, appended).",
       .default_value = "the server log (stderr)"},
      {.name = "--bucket-time-to-first-token",
       .value = "S...",
       .help = "Upper bounds (seconds) of sglang:time_to_first_token_seconds' buckets.",
       .default_value = "SGLang's: 0.1 to 400"},
      {.name = "--bucket-inter-token-latency",
       .value = "S...",
       .help = "Upper bounds (seconds) of sglang:inter_token_latency_seconds' buckets.",
       .default_value = "SGLang's: 0.002 to 8"},
      {.name = "--bucket-e2e-request-latency",
       .value = "S...",
       .help = "Upper bounds (seconds) of sglang:e2e_request_latency_seconds' buckets.",
       .default_value = "SGLang's: 0.1 to 2400"},
      {.name = "--prompt-tokens-buckets",
       .value = "RULE...",
       .help = "Buckets of sglang:prompt_tokens_histogram and "
               "sglang:uncached_prompt_tokens_histogram (SGLang's rules): default, tse <middle> "
               "<base> <count> (middle and middle +- base^i), or custom <value>....",
       .default_value = "default: 100 to 1100000 tokens"},
      {.name = "--generation-tokens-buckets",
       .value = "RULE...",
       .help = "Buckets of sglang:generation_tokens_histogram, by the same rules.",
       .default_value = "default: 100 to 1100000 tokens"},
      {.name = "--extra-metric-labels",
       .value = "JSON",
       .help = "Labels every sglang:* metric carries, as a JSON object: "
               "'{\"cluster\": \"a\"}'."},
      {.name = "--help", .aliases = {"-h"}, .help = "Print this and exit."},
  };
  return table;
}

std::string usage() {
  return "usage: sgl-server --model-path PATH [flags]\n\n" +
         format_flag_help("server flags", server_flag_table()) + "\n" + engine_flags_usage() +
         "\n" +
         format_flag_help("SGLang flags accepted without effect or refused (with the reason)",
                          sglang_compat_flag_table());
}

struct Options {
  server::ServeOptions serve;
  EngineSetup setup;
  int dp_size = 1;  // --dp-size
  bool help = false;
  std::vector<std::string> notes;  // flags whose meaning here differs, logged at start
};

Result<Options> parse_options(int argc, char** argv) {
  const FlagSets sets =
      flag_sets({server_flag_table(), engine_flag_table(), sglang_compat_flag_table()});
  std::vector<std::string> argv_list(argv + std::min(argc, 1), argv + argc);
  Options options;
  if (std::find(argv_list.begin(), argv_list.end(), "--help") != argv_list.end() ||
      std::find(argv_list.begin(), argv_list.end(), "-h") != argv_list.end()) {
    options.help = true;
    return options;
  }
  if (const std::optional<std::string> config = find_config_path(argv_list)) {
    SGL_ASSIGN_OR_RETURN(std::vector<std::string> from_file, config_file_args(*config, sets));
    argv_list.insert(argv_list.begin(), from_file.begin(), from_file.end());
  }
  SGL_ASSIGN_OR_RETURN(CliArgs args, CliArgs::parse(argv_list, sets));
  SGL_RETURN_IF_ERROR(check_flag_support(args, {sglang_compat_flag_table()}, options.notes));
  server::ServeOptions& o = options.serve;
  if (!args.get("--model-path")) return invalid_argument("--model-path is required");
  o.model_path = *args.get("--model-path");
  o.tokenizer_path = args.get("--tokenizer-path").value_or(o.model_path);
  o.skip_tokenizer_init = args.has("--skip-tokenizer-init");
  o.enable_return_hidden_states = args.has("--enable-return-hidden-states");
  if (o.skip_tokenizer_init && args.has("--tokenizer-path")) {
    options.notes.push_back(
        "--tokenizer-path is not read: --skip-tokenizer-init loads no tokenizer");
  }
  SGL_ASSIGN_OR_RETURN(o.cors,
                       server::parse_allowed_origins(args.get("--allowed-origins").value_or("*")));
  o.host = args.get("--host").value_or("127.0.0.1");
  SGL_ASSIGN_OR_RETURN(int64_t port, args.get_int("--port", 30000));
  if (port < 0 || port > 65535) return invalid_argument("--port must be in [0, 65535]");
  o.port = static_cast<int>(port);
  o.served_model_name = args.get("--served-model-name").value_or("");
  o.api_key = args.get("--api-key").value_or("");
  o.admin_api_key = args.get("--admin-api-key").value_or("");
  const std::string sampling_defaults = args.get("--sampling-defaults").value_or("model");
  if (sampling_defaults != "model" && sampling_defaults != "openai") {
    return invalid_argument("--sampling-defaults expects model or openai, got '" +
                            sampling_defaults + "'");
  }
  o.model_sampling_defaults = sampling_defaults == "model";
  o.preferred_sampling_params = args.get("--preferred-sampling-params").value_or("");
  if (!o.preferred_sampling_params.empty()) {  // checked before the model loads
    if (auto checked = server::apply_preferred_sampling_params(o.preferred_sampling_params, {});
        !checked.ok()) {
      return invalid_argument("--preferred-sampling-params: " + checked.status().message());
    }
  }
  o.default_chat_template_kwargs = args.get("--default-chat-template-kwargs").value_or("");
  if (!o.default_chat_template_kwargs.empty()) {
    auto kwargs = server::request_json::parse_object(o.default_chat_template_kwargs);
    if (!kwargs.ok()) {
      return invalid_argument("--default-chat-template-kwargs: " + kwargs.status().message());
    }
    SGL_RETURN_IF_ERROR(
        server::request_json::check_template_kwargs(*kwargs, "--default-chat-template-kwargs"));
  }
  o.api.stream_default_include_usage = args.has("--stream-response-default-include-usage");
  o.api.enable_cache_report = args.has("--enable-cache-report");
  o.api.incremental_streaming_output = args.has("--incremental-streaming-output");
  o.api.allow_auto_truncate = args.has("--allow-auto-truncate");
  if (const auto completion_template = args.get("--completion-template")) {
    SGL_ASSIGN_OR_RETURN(o.api.completion_template,
                         server::load_completion_template(*completion_template));
  }
  SGL_ASSIGN_OR_RETURN(o.api.stream_interval, args.get_int("--stream-interval", 1));
  if (o.api.stream_interval < 1) return invalid_argument("--stream-interval must be at least 1");
  o.chat_template_path = args.get("--chat-template").value_or("");
  o.hf_chat_template_name = args.get("--hf-chat-template-name").value_or("");
  if (o.skip_tokenizer_init &&
      (!o.chat_template_path.empty() || !o.hf_chat_template_name.empty())) {
    return invalid_argument(
        "a chat template with --skip-tokenizer-init: the chat routes need the tokenizer, which "
        "that flag leaves unloaded");
  }
  if (!o.hf_chat_template_name.empty() && !o.chat_template_path.empty()) {
    return invalid_argument(
        "--hf-chat-template-name names one of the tokenizer's templates; --chat-template "
        "replaces them: give one");
  }
  o.tool_call_parser = args.get("--tool-call-parser").value_or("");
  o.reasoning_parser = args.get("--reasoning-parser").value_or("");
  if (!o.tool_call_parser.empty()) {
    SGL_RETURN_IF_ERROR(function_call::check_tool_call_parser(o.tool_call_parser));
  }
  if (!o.reasoning_parser.empty()) {
    SGL_RETURN_IF_ERROR(function_call::check_reasoning_parser(o.reasoning_parser));
  }
  o.grammar_backend = args.get("--grammar-backend").value_or("xgrammar");
  if (o.grammar_backend != "xgrammar" && o.grammar_backend != "outlines" &&
      o.grammar_backend != "llguidance" && o.grammar_backend != "none") {
    return invalid_argument(
        "--grammar-backend expects xgrammar, outlines, llguidance or none, got '" +
        o.grammar_backend + "'");
  }
  if (args.has("--grammar-backend") && o.grammar_backend != "none") {
    options.notes.push_back(
        "--grammar-backend has no effect: structured output always runs on "
        "sgl.cpp's own grammar engine (src/grammar)");
  }
  if (std::optional<std::string> ws = args.get("--constrained-json-whitespace-pattern")) {
    auto pattern = grammar::JsonWhitespacePattern::parse(*ws);
    if (!pattern.ok()) {
      return invalid_argument("--constrained-json-whitespace-pattern: " +
                              pattern.status().message());
    }
    o.json_whitespace_pattern = std::move(pattern).value();
  }
  SGL_ASSIGN_OR_RETURN(const int64_t dp_size, args.get_int("--dp-size", 1));
  if (dp_size < 1 || dp_size > 64) return invalid_argument("--dp-size must be in [1, 64]");
  options.dp_size = static_cast<int>(dp_size);
  SGL_ASSIGN_OR_RETURN(
      o.load_balance_method,
      engine::parse_load_balance_method(args.get("--load-balance-method").value_or("round_robin")));
  SGL_ASSIGN_OR_RETURN(int64_t threads, args.get_int("--http-threads", 4));
  SGL_ASSIGN_OR_RETURN(double read_timeout, args.get_double("--http-read-timeout", 30));
  SGL_ASSIGN_OR_RETURN(double drain_timeout, args.get_double("--drain-timeout", 10));
  if (threads < 1 || threads > 256) return invalid_argument("--http-threads must be in [1, 256]");
  // Bounded so that their milliseconds and the deadlines built from them stay in range.
  constexpr double kMaxTimeoutS = 1e6;
  if (!(read_timeout > 0 && read_timeout <= kMaxTimeoutS) ||
      !(drain_timeout >= 0 && drain_timeout <= kMaxTimeoutS)) {
    return invalid_argument(
        "--http-read-timeout must be in (0, 1e6] and --drain-timeout in [0, 1e6] seconds");
  }
  o.http_threads = static_cast<int>(threads);
  o.http_read_timeout = std::chrono::milliseconds(static_cast<int64_t>(read_timeout * 1000));
  o.drain_timeout = std::chrono::milliseconds(static_cast<int64_t>(drain_timeout * 1000));
  SGL_ASSIGN_OR_RETURN(options.setup, parse_engine_flags(args, "info"));  // sets the log level
  o.request_log.enabled = args.has("--log-requests");
  SGL_ASSIGN_OR_RETURN(const int64_t log_level,
                       args.get_int("--log-requests-level", server::kRequestLogDefaultLevel));
  SGL_RETURN_IF_ERROR(server::check_request_log_level(log_level, "--log-requests-level"));
  o.request_log.level = static_cast<int>(log_level);
  SGL_ASSIGN_OR_RETURN(o.request_log.format, server::parse_request_log_format(
                                                 args.get("--log-requests-format").value_or("text"),
                                                 "--log-requests-format"));
  o.request_log.targets = args.get_list("--log-requests-target");
  SGL_RETURN_IF_ERROR(server::prepare_request_log_targets(o.request_log.targets));
  o.enable_response_store = args.has("--enable-response-store");
  o.warmup = !args.has("--skip-server-warmup");
  SGL_ASSIGN_OR_RETURN(o.health_generates,
                       env_bool("SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION", true));
  SGL_ASSIGN_OR_RETURN(const double health_timeout, env_seconds("SGLANG_HEALTH_CHECK_TIMEOUT"));
  if (health_timeout > 0) o.health_check_timeout_s = health_timeout;
  SGL_ASSIGN_OR_RETURN(std::vector<double> ttft,
                       args.get_double_list("--bucket-time-to-first-token"));
  SGL_ASSIGN_OR_RETURN(std::vector<double> itl,
                       args.get_double_list("--bucket-inter-token-latency"));
  SGL_ASSIGN_OR_RETURN(std::vector<double> e2e,
                       args.get_double_list("--bucket-e2e-request-latency"));
  SGL_ASSIGN_OR_RETURN(
      o.metrics, server::parse_metrics_options(std::move(ttft), std::move(itl), std::move(e2e),
                                               args.get("--extra-metric-labels").value_or("")));
  SGL_ASSIGN_OR_RETURN(o.metrics.prompt_token_buckets,
                       server::token_buckets_from_rule(args.get_list("--prompt-tokens-buckets"),
                                                       "--prompt-tokens-buckets"));
  SGL_ASSIGN_OR_RETURN(o.metrics.generation_token_buckets,
                       server::token_buckets_from_rule(args.get_list("--generation-tokens-buckets"),
                                                       "--generation-tokens-buckets"));
  options.setup.runner.is_embedding = args.has("--is-embedding");
  if (options.setup.runner.is_embedding && !o.chat_template_path.empty()) {
    return invalid_argument(
        "--chat-template with --is-embedding: an embedding model serves no chat route");
  }
  options.notes.insert(options.notes.end(), options.setup.notes.begin(), options.setup.notes.end());
  o.engine = options.setup.engine;
  o.device = options.setup.runner.device.to_string();
  return options;
}

int run(int argc, char** argv) {
  auto parsed = parse_options(argc, argv);
  if (!parsed.ok()) {
    std::cerr << "sgl-server: " << parsed.status().message() << "\n";
    return 2;
  }
  if (parsed->help) {
    std::cout << usage();
    return 0;
  }
  // NOTE: on stderr whatever the log level: a flag that does nothing here must never pass
  // silently.
  for (const std::string& note : parsed->notes) std::cerr << "sgl-server: " << note << "\n";
  const server::ServeOptions& o = parsed->serve;
  const EngineSetup& setup = parsed->setup;
  auto fail = [](const Status& s) {
    std::cerr << "sgl-server: " << s.to_string() << "\n";
    return 1;
  };
  // First, so that a bad path reads as one (not as a missing tokenizer).
  if (auto format = model::check_model_path(o.model_path); !format.ok()) {
    return fail(format.status());
  }
  if (setup.nodes.node_rank > 0) {
    // Another node's ranks: no HTTP server, no tokenizer; node 0 sends the batches (SGLang's
    // --node-rank > 0 too serves no HTTP).
    if (parsed->dp_size > 1) {
      return fail(invalid_argument("--dp-size " + std::to_string(parsed->dp_size) +
                                   " with --nnodes " + std::to_string(setup.nodes.nnodes) +
                                   " is not implemented"));
    }
    // SIGTERM ends it at once (nothing to drain: node 0 holds the requests).
    const Status followed =
        engine::run_follower_node(o.model_path, setup.runner, setup.engine, setup.nodes);
    return followed.ok() ? 0 : fail(followed);
  }
  if (!o.chat_template_path.empty()) {  // before the minutes a model may take to load
    if (Status s = server::check_chat_template_file(o.chat_template_path); !s.ok()) return fail(s);
  }
  // A closed stdout (--log-requests-target stdout, the listening line) fails a write instead of
  // ending the server (sockets already send without SIGPIPE).
  std::signal(SIGPIPE, SIG_IGN);
  // Before any thread starts, so that every thread inherits the mask and serve() gets them.
  server::block_termination_signals();
  std::optional<server::ExitOnTerminationSignal> exit_on_signal(std::in_place, "loading the model");
  std::unique_ptr<tokenizer::Tokenizer> tok;  // null: --skip-tokenizer-init
  if (!o.skip_tokenizer_init) {
    auto loaded = tokenizer::Tokenizer::from_dir(o.tokenizer_path);
    if (!loaded.ok()) return fail(loaded.status());
    tok = std::move(loaded).value();
  }
  // The engine adds the model's own EOS ids (config.json, generation_config.json) to these.
  auto replicas = engine::launch_data_parallel_engines(
      o.model_path, setup.runner, setup.engine, tok ? tok->eos_token_ids() : std::vector<int32_t>{},
      parsed->dp_size, setup.nodes);
  if (!replicas.ok()) return fail(replicas.status());
  exit_on_signal.reset();  // from here serve() waits for the signal (and drains)
  Status status = server::serve(o, *replicas, tok.get(), [](const std::string& url) {
    std::printf("sgl-server listening on %s\n", url.c_str());
    std::fflush(stdout);
  });
  if (!status.ok()) return fail(status);
  return 0;
}

}  // namespace
}  // namespace sgl::app

int main(int argc, char** argv) {
  sgl::app::default_omp_wait_policy_to_passive(argv);
  return sgl::app::run(argc, argv);
}
