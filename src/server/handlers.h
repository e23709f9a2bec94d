// The endpoint handlers. Each runs on an io thread, never blocks for long and never throws:
// bad input becomes an OpenAI-style error response, generations a deferred reply. Chat
// templates and tokenization run on the work pool (PreparedReply).
#pragma once

#include <optional>
#include <string>

#include "server/http_types.h"
#include "server/server_context.h"

namespace sgl::server {

// OpenAI
Reply handle_completions(ServerContext& ctx, const HttpRequest& request);       // completions.cpp
Reply handle_chat_completions(ServerContext& ctx, const HttpRequest& request);  // chat.cpp
Reply handle_models(ServerContext& ctx, const HttpRequest& request);     // admin_handlers.cpp
Reply handle_model(ServerContext& ctx, const HttpRequest& request);      // /v1/models/{id}
Reply handle_responses(ServerContext& ctx, const HttpRequest& request);  // responses_handler.cpp
Reply handle_stored_response(ServerContext& ctx, const HttpRequest& request);  // GET, DELETE
Reply handle_embeddings(ServerContext& ctx, const HttpRequest& request);  // embeddings_handler.cpp
// SGLang's /v1/classify: a classification model's labels (embeddings_handler.cpp)
Reply handle_classify(ServerContext& ctx, const HttpRequest& request);
// SGLang's /v1/score (score_handler.cpp)
Reply handle_score(ServerContext& ctx, const HttpRequest& request);

// Anthropic
Reply handle_messages(ServerContext& ctx, const HttpRequest& request);  // messages_handler.cpp
Reply handle_messages_count_tokens(ServerContext& ctx, const HttpRequest& request);

// Ollama (ollama_handler.cpp)
Reply handle_ollama_chat(ServerContext& ctx, const HttpRequest& request);
Reply handle_ollama_generate(ServerContext& ctx, const HttpRequest& request);
Reply handle_ollama_tags(ServerContext& ctx, const HttpRequest& request);
Reply handle_slow_down(ServerContext& ctx, const HttpRequest& request);
Reply handle_freeze_gc(ServerContext& ctx, const HttpRequest& request);
Reply handle_ollama_ps(ServerContext& ctx, const HttpRequest& request);
Reply handle_ollama_version(ServerContext& ctx, const HttpRequest& request);
Reply handle_ollama_show(ServerContext& ctx, const HttpRequest& request);
Reply handle_ollama_embed(ServerContext& ctx, const HttpRequest& request);  // an embedding model's
Reply handle_ollama_embeddings(ServerContext& ctx, const HttpRequest& request);  // the older one

// SGLang native
Reply handle_generate(ServerContext& ctx, const HttpRequest& request);  // generate.cpp
Reply handle_encode(ServerContext& ctx, const HttpRequest& request);    // embeddings_handler.cpp
Reply handle_health(ServerContext& ctx, const HttpRequest& request);    // admin_handlers.cpp
// SageMaker's /ping: 200 at once (SageMaker times out after 2 s), no engine probe; the port
// opens once the server is ready, and a draining server answers every request 503. SGLang's
// readiness probe /ready: the same, and 503 while generation is paused (/pause_generation).
Reply handle_ping(ServerContext& ctx, const HttpRequest& request);  // admin_handlers.cpp
Reply handle_ready(ServerContext& ctx, const HttpRequest& request);
Reply handle_health_generate(ServerContext& ctx, const HttpRequest& request);
Reply handle_model_info(ServerContext& ctx, const HttpRequest& request);
Reply handle_server_info(ServerContext& ctx, const HttpRequest& request);
Reply handle_flush_cache(ServerContext& ctx, const HttpRequest& request);
// SGLang's /load_lora_adapter and /unload_lora_adapter (lora_handlers.cpp).
Reply handle_load_lora_adapter(ServerContext& ctx, const HttpRequest& request);
Reply handle_unload_lora_adapter(ServerContext& ctx, const HttpRequest& request);
Reply handle_abort_request(ServerContext& ctx, const HttpRequest& request);
// generation_control_handlers.cpp
Reply handle_pause_generation(ServerContext& ctx, const HttpRequest& request);
Reply handle_continue_generation(ServerContext& ctx, const HttpRequest& request);
Reply handle_update_weights_from_disk(ServerContext& ctx, const HttpRequest& request);
Reply handle_update_weight_version(ServerContext& ctx, const HttpRequest& request);
Reply handle_get_weights_by_name(ServerContext& ctx, const HttpRequest& request);
// memory_occupation_handlers.cpp (--enable-memory-saver)
Reply handle_release_memory_occupation(ServerContext& ctx, const HttpRequest& request);
Reply handle_resume_memory_occupation(ServerContext& ctx, const HttpRequest& request);
// Whether any tag is released (hold ctx.generation_control).
bool memory_released(ServerContext& ctx);
// SGLang's /configure_logging (configure_logging_handler.cpp)
Reply handle_configure_logging(ServerContext& ctx, const HttpRequest& request);
// SGLang's /start_profile and /stop_profile (profile_handlers.cpp)
Reply handle_start_profile(ServerContext& ctx, const HttpRequest& request);
Reply handle_stop_profile(ServerContext& ctx, const HttpRequest& request);
// session_handlers.cpp
Reply handle_open_session(ServerContext& ctx, const HttpRequest& request);
Reply handle_close_session(ServerContext& ctx, const HttpRequest& request);
Reply handle_tokenize(ServerContext& ctx, const HttpRequest& request);  // tokenize_handlers.cpp
Reply handle_detokenize(ServerContext& ctx, const HttpRequest& request);
Reply handle_metrics(ServerContext& ctx, const HttpRequest& request);  // admin_handlers.cpp
Reply handle_version(ServerContext& ctx, const HttpRequest& request);
// GET /: a liveness string, as SGLang's root answers "SGLang is running".
Reply handle_root(ServerContext& ctx, const HttpRequest& request);
Reply handle_loads(ServerContext& ctx, const HttpRequest& request);                // /v1/loads
Reply handle_parse_function_call(ServerContext& ctx, const HttpRequest& request);  // parse_handlers
Reply handle_separate_reasoning(ServerContext& ctx, const HttpRequest& request);

}  // namespace sgl::server
