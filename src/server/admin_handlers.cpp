// Model and server endpoints: /v1/models, /health (and /ping), /health_generate,
// /get_model_info, /get_server_info, /version, /v1/loads, /flush_cache, /abort_request, /metrics,
// /slow_down, /freeze_gc.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/embedding_reply.h"
#include "server/engine_request.h"
#include "server/errors.h"
#include "server/handlers.h"
#include "server/openai_json.h"
#include "server/prepared_reply.h"
#include "server/request_json.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;
using request_json::json_response;

// `s` with its %XX escapes decoded (a malformed one stays as written).
std::string percent_decoded(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

json model_card(const ServerContext& ctx) {
  return json{{"id", ctx.info.served_model_name},   {"object", "model"},
              {"created", ctx.info.created},        {"owned_by", "sglang"},
              {"root", ctx.info.served_model_name}, {"max_model_len", ctx.info.context_length}};
}

// A loaded LoRA adapter as SGLang lists it: its name, its path as root, the base as parent.
json lora_card(const ServerContext& ctx, const model::LoraAdapterPath& adapter) {
  return json{{"id", adapter.name},          {"object", "model"},
              {"created", ctx.info.created}, {"owned_by", "sglang"},
              {"root", adapter.path},        {"parent", ctx.info.served_model_name},
              {"max_model_len", nullptr}};
}

HttpResponse healthy() { return plain_text_response(); }

// A paused engine makes no progress on purpose: its probes fail (503) without marking the server
// unhealthy, so an orchestrator does not replace a server a trainer paused for a weight sync.
HttpResponse paused_probe() { return error_response(503, "generation is paused"); }

// SGLang's /health_generate for a generation model: healthy once the engine makes progress after
// the probe starts (its own greedy token, or any step of a busy server, whose queue the probe may
// wait behind or be refused by) within SGLANG_HEALTH_CHECK_TIMEOUT seconds (20 unless set);
// else 503, and the server counts as unhealthy until a probe passes. Polls on a work-pool thread.
Reply health_generate_reply(ServerContext& ctx, const std::atomic<bool>& cancelled) {
  const uint64_t before = ctx.engine.steps_processed();
  const std::chrono::duration<double> timeout(ctx.info.health_check_timeout_s);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  SamplingInput sampling;
  sampling.temperature = 0;
  sampling.max_tokens = 1;
  std::vector<int32_t> bos = {ctx.tokenizer.bos_token_id().value_or(0)};
  auto built = build_engine_request(ctx, sampling, bos, 0, std::nullopt);
  if (!built.ok()) return Reply::of(error_response(503, built.status().message()));
  auto submitted = ctx.engine.submit(std::move(built).value());
  if (!submitted.ok() && submitted.status().code() != StatusCode::kResourceExhausted) {
    return Reply::of(error_response(503, submitted.status().message()));
  }
  // Null when the queue is full: the engine's steps alone answer. They also answer for a probe
  // the engine aborted (a running timeout, say): its abort may come before the step that ran it
  // is counted.
  std::shared_ptr<engine::RequestStream> stream =
      submitted.ok() ? *submitted : std::shared_ptr<engine::RequestStream>();
  bool finished = false;
  while (!cancelled && std::chrono::steady_clock::now() < deadline) {
    if (stream) {
      if (std::optional<engine::StreamEvent> e = stream->next(std::chrono::milliseconds(10));
          e && e->finished) {
        finished = e->finished->reason != scheduler::FinishReason::kAbort;
        stream.reset();
        if (finished) break;
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (ctx.engine.steps_processed() > before) {
      finished = true;
      break;
    }
    if (ctx.engine.paused()) break;
  }
  if (stream) ctx.engine.abort(stream->rid());
  if (!finished && ctx.engine.paused()) return Reply::of(paused_probe());
  if (finished) {
    ctx.unhealthy = false;
    return Reply::of(healthy());
  }
  if (cancelled) return Reply::of(error_response(503, "the health probe was cancelled"));
  ctx.unhealthy = true;
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", timeout.count());
  return Reply::of(
      error_response(503, std::string("the engine made no progress in ") + seconds + " s"));
}

Reply server_info_reply(ServerContext& ctx) {
  const ServerInfo& i = ctx.info;
  const std::vector<engine::EngineStats> replicas = ctx.engine.replica_stats();
  const std::vector<int64_t> routed = ctx.engine.routed_requests();
  // One entry per replica (SGLang's internal_states: one per data-parallel rank).
  json states = json::array();
  int64_t kv_capacity = 0;
  for (size_t rank = 0; rank < replicas.size(); ++rank) {
    const engine::EngineStats& stats = replicas[rank];
    const scheduler::SchedulerStats& s = stats.scheduler;
    kv_capacity += s.kv_capacity;
    states.push_back({{"dp_rank", rank},
                      {"num_running_reqs", s.num_running},
                      {"num_waiting_reqs", s.num_waiting},
                      {"kv_capacity", s.kv_capacity},
                      {"kv_used", s.kv_used},
                      {"kv_cached", s.kv_cached},
                      {"kv_evictable", s.kv_evictable},
                      {"kv_free", s.kv_capacity - s.kv_used},
                      {"kv_in_use_by_requests", s.kv_used - s.kv_cached},
                      {"token_usage", s.kv_usage()},
                      {"cache_hit_rate", s.cache_hit_rate()},
                      {"gen_throughput", stats.generation_throughput},
                      // SGLang's names, which its bench_one_batch_server reads.
                      {"last_gen_throughput", stats.generation_throughput},
                      {"effective_max_running_requests_per_dp", i.max_running_requests},
                      {"prompt_tokens_total", s.prompt_tokens_total},
                      {"cached_prompt_tokens_total", s.cached_prompt_tokens_total},
                      {"generated_tokens_total", s.generated_tokens_total},
                      {"finished_requests_total", s.finished_requests_total},
                      {"routed_requests_total", routed[rank]},
                      {"num_retracted_total", s.num_retracted_total},
                      {"num_preempted_total", s.num_preempted_total},
                      {"avg_spec_accept_length", s.spec_accept_length()},
                      {"spec_verify_steps", s.spec_verify_steps},
                      {"spec_draft_tokens", s.spec_draft_tokens},
                      {"spec_accepted_tokens", s.spec_accepted_tokens},
                      {"spec_plain_requests", s.spec_plain_requests},
                      {"decode_steps", stats.decode_steps},
                      {"decode_step_cpu_us", stats.decode_step_cpu_us},
                      // The server's, not the replica's: requests are not split by replica here.
                      {"http_requests_in_flight", ctx.registry.size()}});
  }
  return Reply::of(json_response(
      {{"version", kServerVersion},
       {"model_path", ctx.weights.path()},
       {"tokenizer_path", i.tokenizer_path},
       {"skip_tokenizer_init", i.skip_tokenizer_init},
       {"enable_return_hidden_states", i.enable_return_hidden_states},
       {"enable_return_routed_experts", i.routed_experts.num_layers > 0},
       {"served_model_name", i.served_model_name},
       {"host", i.host},
       {"port", i.port},
       {"device", i.device},
       {"context_length", i.context_length},
       {"kv_cache_dtype", i.kv_cache_dtype},
       {"enable_memory_saver", i.enable_memory_saver},
       {"enable_weights_cpu_backup", i.enable_weights_cpu_backup},
       {"max_total_num_tokens", kv_capacity},  // all replicas'
       {"max_running_requests", i.max_running_requests},
       {"max_prefill_tokens", i.max_prefill_tokens},
       {"chunked_prefill_size", i.chunked_prefill_size},
       {"max_queued_requests", i.max_queued_requests},
       {"schedule_policy", i.schedule_policy},
       {"disable_radix_cache", i.disable_radix_cache},
       {"enable_priority_scheduling", i.priority.enabled},
       {"schedule_low_priority_values_first", i.priority.low_values_first},
       {"priority_scheduling_preemption_threshold", i.priority.preemption_threshold},
       {"enable_cache_report", i.api.enable_cache_report},
       {"stream_interval", i.api.stream_interval},
       {"incremental_streaming_output", i.api.incremental_streaming_output},
       {"allow_auto_truncate", i.api.allow_auto_truncate},
       {"grammar_backend", i.grammar_backend},
       {"constrained_json_whitespace_pattern",
        i.json_whitespace_pattern ? json(i.json_whitespace_pattern->regex()) : json(nullptr)},
       {"completion_template",
        i.api.completion_template ? json(i.api.completion_template->name) : json(nullptr)},
       {"tp_size", i.tp_size},
       {"ep_size", i.ep_size},
       {"dp_size", i.dp_size},
       {"load_balance_method", i.load_balance_method},
       {"internal_states", std::move(states)}}));
}

Reply loads_reply(ServerContext& ctx) {
  const std::vector<engine::EngineStats> replicas = ctx.engine.replica_stats();
  // One entry per data-parallel rank, as SGLang's router reads it.
  json loads = json::array();
  for (size_t rank = 0; rank < replicas.size(); ++rank) {
    const engine::EngineStats& stats = replicas[rank];
    const scheduler::SchedulerStats& s = stats.scheduler;
    loads.push_back({{"dp_rank", rank},
                     {"num_running_reqs", s.num_running},
                     {"num_waiting_reqs", s.num_waiting},
                     {"num_reqs", s.num_running + s.num_waiting},
                     {"num_used_tokens", s.kv_in_use()},
                     // SGLang's: the KV in use plus what the waiting requests will need
                     // (sgl-model-gateway's load signal).
                     {"num_total_tokens", s.kv_in_use() + s.waiting_tokens},
                     {"max_total_num_tokens", s.kv_capacity},
                     {"max_running_requests", ctx.info.max_running_requests},
                     {"token_usage", s.kv_usage()},
                     {"gen_throughput", stats.generation_throughput},
                     {"cache_hit_rate", s.cache_hit_rate()}});
  }
  return Reply::of(json_response({{"loads", std::move(loads)}}));
}

}  // namespace

Reply handle_models(ServerContext& ctx, const HttpRequest&) {
  json data = json::array({model_card(ctx)});
  for (const model::LoraAdapterPath& adapter : ctx.lora.adapters()) {
    data.push_back(lora_card(ctx, adapter));
  }
  return Reply::of(json_response({{"object", "list"}, {"data", std::move(data)}}));
}

Reply handle_model(ServerContext& ctx, const HttpRequest& request) {
  // A name with a '/' may come raw (the openai SDK's) or as %2F (a client that escapes it).
  const std::string id =
      percent_decoded(request.path.substr(std::string_view("/v1/models/").size()));
  for (const model::LoraAdapterPath& adapter : ctx.lora.adapters()) {
    if (id == adapter.name) return Reply::of(json_response(lora_card(ctx, adapter)));
  }
  if (id != ctx.info.served_model_name) {
    // OpenAI's (and SGLang's) not-found shape for a model.
    return Reply::of(json_response({{"error",
                                     {{"message", "The model '" + id + "' does not exist"},
                                      {"type", "invalid_request_error"},
                                      {"param", "model"},
                                      {"code", "model_not_found"}}}},
                                   404));
  }
  return Reply::of(json_response(model_card(ctx)));
}

// 503 while the latest /health_generate found the engine stalled (SGLang's is_healthy()).
Reply handle_ping(ServerContext& ctx, const HttpRequest&) {
  if (ctx.unhealthy) return Reply::of(error_response(503, "the server is unhealthy"));
  return Reply::of(healthy());
}

// SGLang's is_ready(): healthy and not paused.
Reply handle_ready(ServerContext& ctx, const HttpRequest& request) {
  if (ctx.engine.paused()) return Reply::of(error_response(503, "generation is paused"));
  return handle_ping(ctx, request);
}

Reply handle_health(ServerContext& ctx, const HttpRequest& request) {
  if (ctx.info.health_generates) return handle_health_generate(ctx, request);
  return Reply::of(healthy());
}

Reply handle_health_generate(ServerContext& ctx, const HttpRequest&) {
  if (ctx.engine.paused()) return Reply::of(paused_probe());
  std::vector<int32_t> bos = {ctx.tokenizer.bos_token_id().value_or(0)};
  if (!ctx.info.is_generation) {
    auto streams = submit_encodes(ctx, {bos}, /*logged=*/false, std::nullopt);
    if (!streams.ok()) return Reply::of(error_response(503, streams.status().message()));
    auto ok = [&ctx](const std::vector<Encoded>&, double) {
      ctx.unhealthy = false;
      return healthy();
    };
    return Reply::later(std::make_unique<EmbeddingReply>(ctx, make_request_id("health-"),
                                                         std::move(streams).value(), ok,
                                                         /*log_metrics=*/false),
                        false);
  }
  return PreparedReply::submit(ctx, false, [&ctx](const std::atomic<bool>& cancelled) {
    return health_generate_reply(ctx, cancelled);
  });
}

Reply handle_model_info(ServerContext& ctx, const HttpRequest&) {
  const ServerInfo& i = ctx.info;
  return Reply::of(json_response(
      {{"model_path", ctx.weights.path()},
       {"tokenizer_path", i.tokenizer_path},
       {"served_model_name", i.served_model_name},
       {"is_generation", i.is_generation},
       {"default_chat_template_kwargs", i.default_chat_template_kwargs.empty()
                                            ? json(nullptr)
                                            : json::parse(i.default_chat_template_kwargs)},
       {"preferred_sampling_params", i.preferred_sampling_params.empty()
                                         ? json(nullptr)
                                         : json::parse(i.preferred_sampling_params)},
       {"weight_version", ctx.weights.version()},
       {"has_image_understanding", false},
       {"has_audio_understanding", false},
       {"model_type", i.model_type},
       {"architectures", json::array({i.architecture})},
       {"context_length", i.context_length},
       {"vocab_size", i.vocab_size},
       {"has_chat_template", i.has_chat_template}}));
}

Reply handle_server_info(ServerContext& ctx, const HttpRequest&) {
  return on_admin_pool(ctx, [&ctx] { return server_info_reply(ctx); });
}

Reply handle_flush_cache(ServerContext& ctx, const HttpRequest& request) {
  if (Status s = check_optional_object(request.body); !s.ok()) {
    return Reply::of(error_response(s));
  }
  return on_admin_pool(ctx, [&ctx] {
    if (!ctx.engine.flush_cache()) {
      return Reply::of(error_response(400, "Cache not flushed: requests are running"));
    }
    return Reply::of(plain_text_response("Cache flushed.\n"));
  });
}

// SGLang's /slow_down, for tests: every engine step sleeps `forward_sleep_time` seconds before
// it runs; null or <= 0 turns the sleep off. Answers null, as SGLang does.
Reply handle_slow_down(ServerContext& ctx, const HttpRequest& request) {
  constexpr double kMaxSleepS = 3600;
  auto o = request_json::parse_object(request.body);
  if (!o.ok()) return Reply::of(error_response(o.status()));
  if (!o->contains("forward_sleep_time")) {
    return Reply::of(error_response(
        request_json::field_error("forward_sleep_time", "is required (seconds, or null)")));
  }
  const json& t = (*o)["forward_sleep_time"];
  if (!t.is_null() &&
      (!t.is_number() || !std::isfinite(t.get<double>()) || t.get<double>() > kMaxSleepS)) {
    return Reply::of(error_response(request_json::field_error(
        "forward_sleep_time", "must be a number of seconds up to 3600, or null")));
  }
  ctx.engine.slow_down(t.is_null() ? 0.0 : std::max(0.0, t.get<double>()));
  return Reply::of(json_response(json(nullptr)));
}

// SGLang's /freeze_gc: after a warm-up its Python processes move what their garbage collector
// tracks out of later collections, to shorten the pauses. sgl.cpp has no garbage collector, so
// there is nothing to freeze: answered as SGLang answers. It takes no fields.
Reply handle_freeze_gc(ServerContext& /*ctx*/, const HttpRequest& request) {
  auto o = request_json::parse_optional_object(request.body);
  if (!o.ok()) return Reply::of(error_response(o.status()));
  if (Status s = request_json::check_fields(*o, {}); !s.ok()) return Reply::of(error_response(s));
  return Reply::of(plain_text_response("Garbage collection frozen.\n"));
}

Reply handle_abort_request(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = parse_abort_request(request.body);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  const std::vector<uint64_t> rids =
      parsed->abort_all ? ctx.registry.all_rids() : ctx.registry.find(parsed->rid);
  for (uint64_t rid : rids) ctx.engine.abort(rid);
  return Reply::of(json_response(
      {{"success", !rids.empty()}, {"num_aborted", static_cast<int64_t>(rids.size())}}));
}

Reply handle_version(ServerContext&, const HttpRequest&) {
  return Reply::of(json_response({{"version", kServerVersion}}));
}

Reply handle_root(ServerContext&, const HttpRequest&) {
  return Reply::of(json_response(json("sgl.cpp is running")));
}

Reply handle_loads(ServerContext& ctx, const HttpRequest&) {
  return on_admin_pool(ctx, [&ctx] { return loads_reply(ctx); });
}

Reply handle_metrics(ServerContext& ctx, const HttpRequest&) {
  return on_admin_pool(ctx, [&ctx] {
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = ctx.metrics.render(ctx.engine.replica_stats(), ctx.pool.pending());
    return Reply::of(r);
  });
}

}  // namespace sgl::server
