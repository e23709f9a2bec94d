// POST /v1/messages: the Anthropic Messages API over the chat route's preparation — one text
// content block, Anthropic's stop reasons and usage, its named stream events, and its error
// shape ({"type": "error", "error": {"type", "message"}}).
#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>

#include "server/anthropic_json.h"
#include "server/chat_submit.h"
#include "server/engine_request.h"
#include "server/errors.h"
#include "server/generation_reply.h"
#include "server/handlers.h"
#include "server/prepared_reply.h"
#include "server/request_json.h"
#include "server/sse.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;

// Anthropic's error types by HTTP status.
const char* error_type(int status) {
  switch (status) {
    case 400:
      return "invalid_request_error";
    case 404:
      return "not_found_error";
    case 503:
      return "overloaded_error";
    default:
      return "api_error";
  }
}

json error_json(int status, std::string_view message) {
  return json{{"type", "error"}, {"error", {{"type", error_type(status)}, {"message", message}}}};
}

HttpResponse anthropic_error(const Status& status) {
  const int code = http_status_for(status.code());
  return request_json::json_response(error_json(code, status.message()), code);
}

std::string event(const char* name, const json& data) {
  return std::string("event: ") + name + "\n" + sse_data(request_json::dump(data));
}

class MessagesReply final : public GenerationReply {
 public:
  MessagesReply(ServerContext& ctx, std::vector<std::unique_ptr<ChoiceStream>> choices, bool stream,
                std::string model)
      : GenerationReply(ctx, make_request_id("msg_"), std::move(choices), stream),
        model_(std::move(model)) {}

 private:
  const ChoiceStream& choice() const { return *choices_[0]; }

  // Anthropic counts cached prompt tokens apart from input_tokens.
  json usage(bool with_input) const {
    json u = json::object();
    if (with_input) {
      u["input_tokens"] = choice().prompt_tokens() - choice().cached_tokens();
      u["cache_read_input_tokens"] = choice().cached_tokens();
    }
    u["output_tokens"] = choice().completion_tokens();
    return u;
  }

  // stop_reason and stop_sequence once finished.
  std::pair<json, json> stop() const {
    if (!choice().finished()) return {nullptr, nullptr};
    const FinishInfo& f = choice().finish();
    if (f.reason == "length") return {"max_tokens", nullptr};
    if (f.matched_string) return {"stop_sequence", *f.matched_string};
    return {"end_turn", nullptr};
  }

  // The message; the stream's message_start has no stop reason yet, even when the choice
  // already finished (message_delta carries it).
  json message(json content, bool at_start = false) const {
    const auto [reason, sequence] = at_start ? std::pair<json, json>() : stop();
    return json{{"id", id_},
                {"type", "message"},
                {"role", "assistant"},
                {"content", std::move(content)},
                {"model", model_},
                {"stop_reason", reason},
                {"stop_sequence", sequence},
                {"usage", usage(true)}};
  }

  bool aborted() const { return choice().finished() && choice().finish().reason == "abort"; }

  std::string stream_delta(size_t /*index*/, const ChoiceDelta& d) override {
    std::string out;
    if (!started_) {
      started_ = true;
      out += event("message_start",
                   {{"type", "message_start"}, {"message", message(json::array(), true)}});
      out += event("content_block_start", {{"type", "content_block_start"},
                                           {"index", 0},
                                           {"content_block", {{"type", "text"}, {"text", ""}}}});
      out += event("ping", {{"type", "ping"}});
    }
    if (!d.text.empty()) {
      out += event("content_block_delta", {{"type", "content_block_delta"},
                                           {"index", 0},
                                           {"delta", {{"type", "text_delta"}, {"text", d.text}}}});
    }
    if (d.finished) {
      if (aborted()) return out + event("error", error_json(500, choice().finish().message));
      const auto [reason, sequence] = stop();
      out += event("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}});
      out +=
          event("message_delta", {{"type", "message_delta"},
                                  {"delta", {{"stop_reason", reason}, {"stop_sequence", sequence}}},
                                  {"usage", usage(false)}});
      out += event("message_stop", {{"type", "message_stop"}});
    }
    return out;
  }

  std::string stream_end() override { return {}; }  // message_stop ended it (no [DONE])

  HttpResponse complete() override {
    if (aborted())
      return request_json::json_response(error_json(500, choice().finish().message), 500);
    return request_json::json_response(
        message(json::array({{{"type", "text"}, {"text", choice().total().text}}})));
  }

  const std::string model_;
  bool started_ = false;
};

Reply prepare_messages(ServerContext& ctx, const ChatRequest& req,
                       const std::atomic<bool>& cancelled) {
  auto submitted = submit_chat(ctx, req, cancelled);
  if (!submitted.ok()) return Reply::of(anthropic_error(submitted.status()));
  return Reply::later(
      std::make_unique<MessagesReply>(ctx, std::move(submitted->choices), req.stream,
                                      req.model.value_or(ctx.info.served_model_name)),
      req.stream);
}

}  // namespace

Reply handle_messages(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = parse_messages_request(request.body, ctx.sampling_defaults);
  if (!parsed.ok()) return Reply::of(anthropic_error(parsed.status()));
  if (Status s = check_chat_template(ctx); !s.ok()) return Reply::of(anthropic_error(s));
  const bool stream = parsed->stream;
  auto shared = std::make_shared<const ChatRequest>(std::move(parsed).value());
  return PreparedReply::submit(ctx, stream, [&ctx, shared](const std::atomic<bool>& cancelled) {
    return prepare_messages(ctx, *shared, cancelled);
  });
}

}  // namespace sgl::server
