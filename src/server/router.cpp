// Router.
#include "server/router.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <string>

#include "core/logging.h"
#include "server/errors.h"
#include "server/handlers.h"
#include "server/request_log_json.h"

namespace sgl::server {
namespace {

// A deferred reply counted in the metrics' responses once it answers: its status (an event
// stream's 200), or 499 when the client closed the connection before.
class CountedReply final : public DeferredReply {
 public:
  CountedReply(Metrics& metrics, std::string endpoint, std::string method,
               std::unique_ptr<DeferredReply> inner)
      : metrics_(metrics),
        endpoint_(std::move(endpoint)),
        method_(std::move(method)),
        inner_(std::move(inner)) {}

  void start(std::function<void()> wake) override { inner_->start(std::move(wake)); }
  Progress poll() override {
    Progress p = inner_->poll();
    if (p.done) count(p.response ? p.response->status : 200);
    return p;
  }
  void cancel() override {
    inner_->cancel();
    count(499);
  }

 private:
  void count(int status) {
    if (counted_) return;
    counted_ = true;
    metrics_.count_response(endpoint_, method_, status);
  }

  Metrics& metrics_;
  const std::string endpoint_, method_;
  std::unique_ptr<DeferredReply> inner_;
  bool counted_ = false;
};

// A deferred reply of the Anthropic or Ollama routes whose error response, made by code shared
// with the OpenAI routes (a busy work pool, a failed preparation), is rewritten in their shape.
class ShapedErrorReply final : public DeferredReply {
 public:
  ShapedErrorReply(std::unique_ptr<DeferredReply> inner, ErrorReshape reshape)
      : inner_(std::move(inner)), reshape_(reshape) {}
  void start(std::function<void()> wake) override { inner_->start(std::move(wake)); }
  Progress poll() override {
    Progress p = inner_->poll();
    if (p.response) reshape_(*p.response);
    return p;
  }
  void cancel() override { inner_->cancel(); }

 private:
  std::unique_ptr<DeferredReply> inner_;
  ErrorReshape reshape_;
};

}  // namespace

Router::Router(ServerContext& ctx) : ctx_(ctx) {
  const std::vector<std::string> get = {"GET"}, post = {"POST"}, both = {"GET", "POST"},
                                 post_put = {"POST", "PUT"},
                                 get_post_delete = {"GET", "POST", "DELETE"};
  constexpr Needs any = Needs::kAny, gen = Needs::kGeneration, embed = Needs::kEmbedding;
  constexpr bool text = true;    // needs the tokenizer
  constexpr bool logged = true;  // logs_body
  // Which key a route takes (SGLang's levels): open probes, the API key, the admin key.
  constexpr AuthLevel open = AuthLevel::kPublic, user = AuthLevel::kNormal,
                      admin = AuthLevel::kAdmin;
  routes_ = {
      {"/v1/completions", false, post, handle_completions, user, gen, text, logged},
      {"/v1/chat/completions", false, post, handle_chat_completions, user, gen, text, logged},
      // SageMaker's name.
      {"/invocations", false, post, handle_chat_completions, user, gen, text, logged},
      {"/v1/responses", false, post, handle_responses, user, gen, text, logged},
      {"/v1/responses/", true, get_post_delete, handle_stored_response, user, gen, text},
      {"/v1/messages", false, post, handle_messages, user, gen, text, logged},
      {"/v1/messages/count_tokens", false, post, handle_messages_count_tokens, user, gen, text},
      {"/v1/embeddings", false, post, handle_embeddings, user, embed, false, logged},
      {"/v1/classify", false, post, handle_classify, user, embed, false, logged},
      {"/v1/score", false, post, handle_score, user, gen, false, logged},
      // Ollama's, as SGLang serves them.
      {"/api/chat", false, post, handle_ollama_chat, user, gen, text},
      {"/api/generate", false, post, handle_ollama_generate, user, gen, text},
      {"/api/tags", false, get, handle_ollama_tags, user},
      {"/api/ps", false, get, handle_ollama_ps, user},
      {"/api/version", false, get, handle_ollama_version, user},
      {"/api/show", false, post, handle_ollama_show, user},
      {"/api/embed", false, post, handle_ollama_embed, user, embed, text},
      {"/api/embeddings", false, post, handle_ollama_embeddings, user, embed, text},
      {"/v1/models", false, get, handle_models, user},
      {"/v1/models/", true, get, handle_model, user},
      {"/generate", false, post_put, handle_generate, user, gen},  // SGLang's methods
      {"/encode", false, post_put, handle_encode, user, embed},
      {"/classify", false, post_put, handle_encode, user, embed},  // SGLang's: /encode's reply
      {"/health", false, get, handle_health, open},
      {"/health_generate", false, get, handle_health_generate, open},
      {"/get_model_info", false, get, handle_model_info, user},
      {"/model_info", false, get, handle_model_info, user},  // SGLang 0.5's names beside the old
      {"/get_server_info", false, get, handle_server_info, user},
      {"/server_info", false, get, handle_server_info, user},
      {"/v1/loads", false, get, handle_loads, user},
      {"/version", false, get, handle_version, user},
      // SGLang's API key guards / and /ping too: only /health*, /ready and /metrics stay open.
      {"/", false, get, handle_root, user},
      {"/ping", false, both, handle_ping, user},
      {"/ready", false, get, handle_ready, open},  // SGLang's readiness probe (public there too)
      {"/flush_cache", false, both, handle_flush_cache, admin},
      {"/abort_request", false, post, handle_abort_request, admin},
      {"/slow_down", false, both, handle_slow_down, admin},  // SGLang's, for tests
      {"/freeze_gc", false, both, handle_freeze_gc, admin},
      {"/pause_generation", false, post, handle_pause_generation, admin},
      {"/continue_generation", false, post, handle_continue_generation, admin},
      {"/update_weights_from_disk", false, post, handle_update_weights_from_disk, admin},
      {"/update_weight_version", false, post, handle_update_weight_version, admin},
      {"/load_lora_adapter", false, post, handle_load_lora_adapter, admin},
      {"/unload_lora_adapter", false, post, handle_unload_lora_adapter, admin},
      {"/get_weights_by_name", false, both, handle_get_weights_by_name, admin},  // SGLang's methods
      {"/release_memory_occupation", false, both, handle_release_memory_occupation, admin},
      {"/resume_memory_occupation", false, both, handle_resume_memory_occupation, admin},
      {"/configure_logging", false, both, handle_configure_logging, admin},  // SGLang's methods
      {"/start_profile", false, both, handle_start_profile, admin},
      {"/stop_profile", false, both, handle_stop_profile, admin},
      {"/open_session", false, both, handle_open_session, user, gen},  // SGLang's methods
      {"/close_session", false, both, handle_close_session, user, gen},
      {"/tokenize", false, post, handle_tokenize, user, any, text},
      {"/v1/tokenize", false, post, handle_tokenize, user, any, text},
      {"/detokenize", false, post, handle_detokenize, user, any, text},
      {"/v1/detokenize", false, post, handle_detokenize, user, any, text},
      {"/metrics", false, get, handle_metrics, open},
      {"/parse_function_call", false, post, handle_parse_function_call, user},
      {"/separate_reasoning", false, post, handle_separate_reasoning, user},
  };
}

Reply Router::dispatch(const HttpRequest& request, std::string& endpoint) {
  for (const Route& route : routes_) {
    const bool match = route.prefix
                           ? request.path.size() > route.path.size() &&
                                 request.path.compare(0, route.path.size(), route.path) == 0
                           : request.path == route.path;
    if (!match) continue;
    endpoint = route.prefix ? route.path + "{id}" : route.path;
    ctx_.metrics.count_request(endpoint, request.method);
    if (!ctx_.auth.allows(request, route.auth)) {
      return Reply::of(error_response(
          401, route.auth == AuthLevel::kAdmin
                   ? "invalid or missing admin API key (Authorization: Bearer, or x-api-key)"
                   : "invalid or missing API key (Authorization: Bearer, or x-api-key)"));
    }
    if (std::find(route.methods.begin(), route.methods.end(), request.method) ==
        route.methods.end()) {
      HttpResponse r =
          error_response(405, "method " + request.method + " is not allowed on " + request.path);
      std::string allow;
      for (const std::string& m : route.methods) allow += (allow.empty() ? "" : ", ") + m;
      r.headers.emplace_back("Allow", allow);
      return Reply::of(std::move(r));
    }
    if (route.needs == Needs::kGeneration && !ctx_.info.is_generation) {
      return Reply::of(error_response(
          400, "the server serves an embedding model (--is-embedding): " + request.path +
                   " generates text; use /v1/embeddings or /encode"));
    }
    if (route.needs == Needs::kEmbedding && ctx_.info.is_generation) {
      // SGLang's words for the same request.
      return Reply::of(error_response(
          400,
          "This model does not appear to be an embedding model by default. Please add "
          "`--is-embedding` when launching the server or try another model."));
    }
    if (route.needs_tokenizer && ctx_.info.skip_tokenizer_init) {
      return Reply::of(error_response(
          400, request.path +
                   " reads or writes text, and this server has no tokenizer "
                   "(--skip-tokenizer-init): token ids go to /generate and /v1/score (an "
                   "embedding model's to /v1/embeddings and /encode)"));
    }
    if (route.logs_body) {
      const RequestLogView log = ctx_.request_log.view();
      if (log.enabled && log.level >= 2) {
        ctx_.request_log.write(request_log::api_request_line(log, request.path, request.body));
      }
    }
    return route.handler(ctx_, request);
  }
  endpoint = "unmatched";
  ctx_.metrics.count_request(endpoint, request.method);
  return Reply::of(error_response(404, "no route for " + request.path));
}

Reply Router::handle(const HttpRequest& request) noexcept {
  Reply reply;
  std::string endpoint = "unmatched";  // the metrics' label
  try {
    reply = dispatch(request, endpoint);
  } catch (const std::exception& e) {
    SGL_LOG_ERROR << request.method << " " << request.path << " failed: " << e.what();
    reply = Reply::of(error_response(500, std::string("internal error: ") + e.what()));
  } catch (...) {
    reply = Reply::of(error_response(500, "internal error"));
  }
  // Every error of the Anthropic and Ollama routes in their API's shape (SGLang rewrites the
  // former), the router's own (401, 404, 405) included.
  const ErrorReshape reshape = error_reshape_for(request.path);
  if (reshape != nullptr && reply.deferred) {
    reply.deferred = std::make_unique<ShapedErrorReply>(std::move(reply.deferred), reshape);
  } else if (reshape != nullptr) {
    reshape(reply.response);
  }
  if (!reply.deferred) {
    ctx_.metrics.count_response(endpoint, request.method, reply.response.status);
  } else {
    reply.deferred = std::make_unique<CountedReply>(ctx_.metrics, std::move(endpoint),
                                                    request.method, std::move(reply.deferred));
  }
  return reply;
}

}  // namespace sgl::server
