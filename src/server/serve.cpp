// serve(): wiring (context, router, HTTP server), signal wait and drain.
#include "server/serve.h"

#include <signal.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <thread>

#include "core/logging.h"
#include "scheduler/scheduler_options.h"
#include "server/chat_template_loader.h"
#include "server/engine_request.h"
#include "server/http_server.h"
#include "server/openai_json.h"
#include "server/request_json.h"
#include "server/router.h"
#include "server/server_warmup.h"
#include "server/termination_signals.h"
#include "server/tool_choice.h"
#include "tokenizer/ids_only_tokenizer.h"

namespace sgl::server {
namespace {

// Waits up to `timeout` for `done`; false early if a termination signal arrives.
template <typename Done>
bool wait_for(Done done, std::chrono::milliseconds timeout) {
  const sigset_t set = termination_signals();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    timespec pause{0, 20'000'000};
    if (sigtimedwait(&set, nullptr, &pause) > 0) return false;
  }
  return true;
}

// OpenAI's sampling defaults, with the values the model's generation_config.json recommends.
SamplingInput model_sampling_defaults(const model::GenerationDefaults& g) {
  SamplingInput s;
  s.temperature = g.temperature.value_or(s.temperature);
  s.top_p = g.top_p.value_or(s.top_p);
  s.top_k = g.top_k.value_or(s.top_k);
  s.min_p = g.min_p.value_or(s.min_p);
  s.repetition_penalty = g.repetition_penalty.value_or(s.repetition_penalty);
  return s;
}

}  // namespace

Status serve(const ServeOptions& options, std::span<engine::ModelEngine> replicas,
             const tokenizer::Tokenizer* loaded_tokenizer,
             const std::function<void(const std::string& url)>& on_ready) {
  SGL_CHECK(!replicas.empty());
  SGL_CHECK((loaded_tokenizer == nullptr) == options.skip_tokenizer_init);
  // Every replica holds the same model: replica 0 answers for the model's facts.
  const engine::ModelEngine& model_engine = replicas.front();
  const model::ModelConfig& config = model_engine.model_runner->config();
  // --skip-tokenizer-init: the model's own BOS and EOS ids stand in for the tokenizer's.
  std::optional<tokenizer::IdsOnlyTokenizer> ids_only;
  if (loaded_tokenizer == nullptr) {
    ids_only.emplace(
        config.bos_token_id >= 0 ? std::optional<int32_t>(config.bos_token_id) : std::nullopt,
        config.eos_token_ids);
  }
  const tokenizer::Tokenizer& tokenizer =
      loaded_tokenizer != nullptr ? *loaded_tokenizer : *ids_only;
  std::vector<engine::Engine*> engines;
  int64_t kv_slots = 0;
  for (engine::ModelEngine& r : replicas) {
    engines.push_back(r.engine.get());
    kv_slots += r.model_runner->num_kv_slots();
  }
  engine::DataParallelController controller(std::move(engines), options.load_balance_method);
  // Chat templates and tokenization run on the pool (a known stack for the template's stack
  // guard, bounded concurrency); the template is checked there once before anything listens.
  WorkPoolOptions pool_options;
  pool_options.threads =
      std::clamp(static_cast<int>(std::thread::hardware_concurrency()) / 2, 2, 8);
  // The queue holds only requests already read into memory: it bounds a burst far past any
  // client's concurrency (load tests open 1024 streams at once) rather than real traffic.
  pool_options.max_queued = 16384;
  SGL_ASSIGN_OR_RETURN(std::unique_ptr<WorkPool> pool, WorkPool::start(pool_options));
  // Stats, metrics and cache flushes: two threads (a scrape never waits behind a flush), a
  // queue that bounds a flood of scrapes.
  WorkPoolOptions admin_options;
  admin_options.threads = 2;
  admin_options.max_queued = 1024;
  admin_options.stack_bytes = size_t{1} << 20;
  SGL_ASSIGN_OR_RETURN(std::unique_ptr<WorkPool> admin_pool, WorkPool::start(admin_options));
  const std::string& tokenizer_path =
      options.tokenizer_path.empty() ? options.model_path : options.tokenizer_path;
  const bool is_generation = !model_engine.model_runner->pooler().is_embedding();
  // An embedding model serves no chat route: its tokenizer's template is not loaded; nor is one
  // without a tokenizer (the chat routes are refused).
  LoadedChatTemplate loaded;
  if (!is_generation && !options.chat_template_path.empty()) {  // a classifier without the flag
    return invalid_argument("--chat-template with " + config.architecture +
                            ", which is served as an embedding model: it serves no chat route");
  }
  if (is_generation && !options.skip_tokenizer_init) {
    SGL_ASSIGN_OR_RETURN(
        loaded, load_chat_template(options.chat_template_path, tokenizer_path, tokenizer, *pool,
                                   options.hf_chat_template_name));
  }
  const std::optional<tokenizer::ChatTemplate>& chat_template = loaded.chat_template;
  ServerInfo info;
  info.model_path = options.model_path;
  info.served_model_name =
      options.served_model_name.empty() ? options.model_path : options.served_model_name;
  info.host = options.host;
  info.context_length = model_engine.model_runner->context_length();
  info.vocab_size = config.vocab_size;
  info.hidden_size = config.hidden_size;
  info.labels = config.labels;
  info.is_generation = is_generation;
  info.architecture = config.architecture;
  info.model_type = config.model_type;
  info.device = options.device;
  info.tp_size = model_engine.model_runner->options().tp_size;
  info.ep_size = model_engine.model_runner->options().ep_size;
  info.load_format = model_engine.model_runner->options().load_format;
  info.kv_cache_dtype = model_engine.model_runner->options().kv_cache_dtype;
  info.enable_memory_saver = model_engine.model_runner->options().enable_memory_saver;
  info.enable_lora = model_engine.model_runner->options().enable_lora;
  info.lora_adapters = model_engine.model_runner->options().lora_paths;
  info.max_loaded_loras = model_engine.model_runner->options().max_loaded_loras;
  info.enable_weights_cpu_backup = model_engine.model_runner->options().enable_weights_cpu_backup;
  info.request_log = options.request_log;
  info.enable_response_store = options.enable_response_store;
  info.health_generates = options.health_generates;
  info.health_check_timeout_s = options.health_check_timeout_s;
  info.metrics = options.metrics;
  info.tool_call_parser = options.tool_call_parser;
  info.reasoning_parser = options.reasoning_parser;
  info.json_whitespace_pattern = options.json_whitespace_pattern;
  info.grammar_backend = options.grammar_backend;
  if (!options.tool_call_parser.empty()) {
    const std::optional<std::string> unheld =
        strict_auto_tools_unheld(options.tool_call_parser, options.reasoning_parser, tokenizer);
    info.strict_auto_tools = !unheld.has_value();
    // SGLang serves these unconstrained too; the forced tool_choice modes still hold calls.
    if (unheld) SGL_LOG_INFO << *unheld;
  }
  info.tokenizer_path = tokenizer_path;
  info.created = unix_time();
  info.dp_size = static_cast<int>(replicas.size());
  info.load_balance_method = engine::load_balance_method_name(options.load_balance_method);
  const scheduler::SchedulerOptions& so = options.engine.scheduler;
  info.max_running_requests = so.max_running_requests;
  info.max_prefill_tokens = so.max_prefill_tokens;
  info.chunked_prefill_size = so.chunked_prefill_size;
  info.max_queued_requests = so.max_queued_requests;
  info.schedule_policy = scheduler::schedule_policy_name(so.policy);
  info.disable_radix_cache = so.disable_radix_cache;
  info.priority = so.priority;
  info.has_chat_template = chat_template.has_value();
  info.skip_tokenizer_init = options.skip_tokenizer_init;
  info.enable_return_hidden_states = options.enable_return_hidden_states;
  if (model_engine.model_runner->options().enable_return_routed_experts) {
    info.routed_experts.num_layers = config.num_hidden_layers;
    info.routed_experts.top_k = config.num_experts_per_tok;
    for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
      if (config.is_sparse_layer(layer)) info.routed_experts.sparse_layers.push_back(layer);
    }
  }
  info.chat_template_origin = loaded.origin;
  if (tokenizer.vocab_size() > config.vocab_size) {
    SGL_LOG_WARN << "the tokenizer (" << tokenizer_path << ") has " << tokenizer.vocab_size()
                 << " tokens but the model's vocabulary has " << config.vocab_size
                 << ": prompts holding the ids past it are refused (400); is it this model's "
                    "tokenizer?";
  }

  // What a request's sampling starts from (checked before the port opens).
  SamplingInput sampling_defaults;
  if (options.model_sampling_defaults && is_generation) {
    sampling_defaults = model_sampling_defaults(config.generation_defaults);
  }
  if (!options.preferred_sampling_params.empty()) {
    auto preferred =
        apply_preferred_sampling_params(options.preferred_sampling_params, sampling_defaults);
    if (!preferred.ok()) {
      return invalid_argument("--preferred-sampling-params: " + preferred.status().message());
    }
    sampling_defaults = std::move(preferred).value();
    info.preferred_sampling_params = options.preferred_sampling_params;
  }
  info.default_chat_template_kwargs = options.default_chat_template_kwargs;
  if (!info.default_chat_template_kwargs.empty()) {  // checked by the flag's parsing
    SGL_ASSIGN_OR_RETURN(const auto kwargs,
                         request_json::parse_object(info.default_chat_template_kwargs));
    if (kwargs.contains("enable_thinking")) {
      info.default_enable_thinking = kwargs["enable_thinking"].get<bool>();
    }
  }
  info.api = options.api;
  if (is_generation &&
      (options.model_sampling_defaults || !info.preferred_sampling_params.empty())) {
    const SamplingInput& d = sampling_defaults;
    SGL_LOG_INFO << "sampling defaults (--sampling-defaults "
                 << (options.model_sampling_defaults ? "model" : "openai")
                 << (info.preferred_sampling_params.empty() ? "" : ", --preferred-sampling-params")
                 << "): temperature " << d.temperature << ", top_p " << d.top_p << ", top_k "
                 << d.top_k << ", min_p " << d.min_p << ", repetition_penalty "
                 << d.repetition_penalty;
  }

  // On the CPU a fresh process has no first-use costs worth a prefill at start. A termination
  // signal during the warm-up ends the server before it listens.
  if (options.warmup && is_generation && !model_engine.model_runner->options().device.is_cpu()) {
    const sigset_t signals = termination_signals();
    const auto signalled = [&signals] {
      timespec now{0, 0};
      return sigtimedwait(&signals, nullptr, &now) > 0;
    };
    SGL_ASSIGN_OR_RETURN(const WarmupEnd end, warm_up(replicas, signalled));
    if (end == WarmupEnd::kStopped) {
      SGL_LOG_WARN << "sgl-server: a termination signal during the warm-up: exiting";
      return Status::ok_status();
    }
  }

  HttpServerOptions http;
  http.host = options.host;
  http.port = options.port;
  http.num_threads = options.http_threads;
  http.read_timeout = options.http_read_timeout;
  http.cors = options.cors;
  // The port is known only once bound (--port 0), so ServerInfo takes it afterwards.
  std::unique_ptr<ServerContext> ctx;
  std::unique_ptr<Router> router;
  std::atomic<Router*> live_router{nullptr};
  auto started = HttpServer::start(http, [&live_router](HttpRequest& request) {
    Router* r = live_router.load();
    if (r == nullptr) {
      Reply reply;
      reply.response.status = 503;
      return reply;
    }
    return r->handle(request);
  });
  if (!started.ok()) return started.status();
  std::unique_ptr<HttpServer> server = std::move(started).value();
  info.port = server->port();
  ctx = std::make_unique<ServerContext>(
      controller, tokenizer, chat_template ? &*chat_template : nullptr, info,
      ApiAuth(options.api_key, options.admin_api_key), *pool, *admin_pool);
  ctx->sampling_defaults = std::move(sampling_defaults);
  ctx->model_engines = replicas;
  router = std::make_unique<Router>(*ctx);
  live_router = router.get();

  std::string host =
      options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host;
  const std::string url = "http://" + host + ":" + std::to_string(info.port);
  const std::string dp =
      replicas.size() > 1
          ? std::to_string(replicas.size()) + " replicas (" +
                std::string(engine::load_balance_method_name(options.load_balance_method)) + "), "
          : "";
  SGL_LOG_INFO << "ready: " << info.served_model_name << " (" << info.architecture << ", context "
               << info.context_length << " tokens, " << dp << "KV cache " << kv_slots << " tokens, "
               << (!info.is_generation        ? std::string("embedding model")
                   : info.skip_tokenizer_init ? std::string("token ids only, no tokenizer")
                   : info.has_chat_template   ? "chat template from " + info.chat_template_origin
                                              : std::string("no chat template"))
               << ") on " << info.device << " at " << url;
  on_ready(url);

  const sigset_t set = termination_signals();
  int signal_number = 0;
  sigwait(&set, &signal_number);
  SGL_LOG_WARN << "sgl-server: signal " << signal_number << ", draining (" << ctx->registry.size()
               << " requests in flight)";
  server->stop_accepting();
  // Renders and tokenizations in progress see their cancel flags and stop within milliseconds;
  // their clients get a 503. What already reached the engine drains below.
  pool->stop();
  admin_pool->stop();
  if (!wait_for([&] { return ctx->registry.size() == 0; }, options.drain_timeout)) {
    const std::vector<uint64_t> rids = ctx->registry.all_rids();
    SGL_LOG_WARN << "sgl-server: aborting " << rids.size() << " unfinished requests";
    for (uint64_t rid : rids) ctx->engine.abort(rid);
    wait_for([&] { return ctx->registry.size() == 0; }, std::chrono::seconds(5));
  }
  server->stop();
  server.reset();  // sessions (and their replies) go before the context they use
  return Status::ok_status();
}

}  // namespace sgl::server
