// POST /v1/messages: the Anthropic Messages API over the chat route's preparation — a thinking
// content block for the model's reasoning (with --reasoning-parser), a text content block, a
// tool_use block per tool call (streamed as input_json_delta), Anthropic's stop reasons and usage,
// its named stream events, and its error shape
// ({"type": "error", "error": {"type", "message"}}): the router rewrites this route's error
// responses in it (errors.h); only an error event inside a stream is written here.
#include <algorithm>
#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "server/anthropic_json.h"
#include "server/chat_submit.h"
#include "server/engine_request.h"
#include "server/errors.h"
#include "server/generation_reply.h"
#include "server/handlers.h"
#include "server/messages_blocks.h"
#include "server/prepared_reply.h"
#include "server/request_json.h"
#include "server/sse.h"
#include "server/thinking_switch.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;

using anthropic::sse_event;

class MessagesReply final : public GenerationReply {
 public:
  // `reasoning`: the choice's reasoning is separated (it may open with a thinking block);
  // `tool_calls`: tool calls are parsed (the reply may be tool_use blocks only).
  // `rid`: the client's request id (SGLang's rid, passed through); empty: one is made up.
  MessagesReply(ServerContext& ctx, std::vector<std::unique_ptr<ChoiceStream>> choices, bool stream,
                std::string model, bool reasoning, bool tool_calls, const std::string& rid)
      : GenerationReply(ctx, reply_id(rid, "msg_"), std::move(choices), stream),
        model_(std::move(model)),
        blocks_(/*text_first=*/!reasoning && !tool_calls) {}

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
    if (f.reason == "tool_calls") return {"tool_use", nullptr};
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
      out += sse_event("message_start",
                       {{"type", "message_start"}, {"message", message(json::array(), true)}});
      out += blocks_.start();
      out += sse_event("ping", {{"type", "ping"}});
    }
    out += blocks_.add(d);
    if (!d.finished) return out;
    if (aborted()) {
      // As SGLang: the open block closed, the error, then the message's end.
      out += blocks_.close();
      out += "event: error\n" + sse_data(abort_error().body);
    } else {
      const auto [reason, sequence] = stop();
      out += blocks_.finish();
      out += sse_event("message_delta",
                       {{"type", "message_delta"},
                        {"delta", {{"stop_reason", reason}, {"stop_sequence", sequence}}},
                        {"usage", usage(false)}});
    }
    return out + sse_event("message_stop", {{"type", "message_stop"}});
  }

  std::string stream_end() override { return {}; }  // message_stop ended it (no [DONE])

  // Its stream's own error event; the error response with the abort's status.
  std::string stream_error(size_t index, const ChoiceDelta& d) override {
    return stream_delta(index, d);
  }
  HttpResponse error_reply(const FinishInfo&) override { return abort_error(); }

  // An abort is an error here (Anthropic's API has no aborted message): the server's with its
  // status, the client's as 500.
  HttpResponse abort_error() const {
    const FinishInfo& f = choice().finish();
    return anthropic_error_response(f.error() ? f.status : 500, f.message);
  }

  HttpResponse complete() override {
    if (aborted()) return abort_error();
    return request_json::json_response(message(anthropic::content_blocks(choice().total())));
  }

  const std::string model_;
  anthropic::BlockStream blocks_;
  bool started_ = false;
};

Reply prepare_messages(ServerContext& ctx, const ChatRequest& req,
                       const std::atomic<bool>& cancelled) {
  auto claim = ctx.registry.claim(client_request_ids(req.routing));
  if (!claim.ok()) return Reply::of(error_response(claim.status()));
  auto submitted = submit_chat(ctx, req, cancelled);
  if (!submitted.ok()) return Reply::of(error_response(submitted.status()));
  return Reply::later(
      std::make_unique<MessagesReply>(ctx, std::move(submitted->choices), req.stream,
                                      req.model.value_or(ctx.info.served_model_name),
                                      submitted->reasoning, submitted->tool_calls, req.routing.rid),
      req.stream);
}

}  // namespace

Reply handle_messages(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = parse_messages_request(request.body, ctx.sampling_defaults);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  if (Status s = check_chat_template(ctx); !s.ok()) return Reply::of(error_response(s));
  if (Status s = check_thinking_switch(ctx, *parsed, "'thinking' / 'output_config.effort'");
      !s.ok()) {
    return Reply::of(error_response(s));
  }
  const bool stream = parsed->stream;
  auto shared = std::make_shared<const ChatRequest>(std::move(parsed).value());
  return PreparedReply::submit(ctx, stream, [&ctx, shared](const std::atomic<bool>& cancelled) {
    return prepare_messages(ctx, *shared, cancelled);
  });
}

// POST /v1/messages/count_tokens: the prompt a Messages request with these fields would have
// (SGLang's: the request rendered by the chat template, its tokens counted).
Reply handle_messages_count_tokens(ServerContext& ctx, const HttpRequest& request) {
  auto body = nlohmann::ordered_json::parse(request.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    return Reply::of(error_response(400, "the body must be a JSON object"));
  }
  // Anthropic's CountTokens fields; anything else (max_tokens, sampling) would be ignored.
  if (Status s =
          request_json::check_fields(body, {"model", "messages", "system", "thinking", "tools",
                                            "tool_choice", "output_config", "betas"});
      !s.ok()) {
    return Reply::of(error_response(s));
  }
  body.erase("betas");     // beta feature names: nothing they name changes a prompt here
  body["max_tokens"] = 1;  // required by the Messages parser, counts nothing
  auto parsed = parse_messages_request(request_json::dump(body), ctx.sampling_defaults);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  if (Status s = check_chat_template(ctx); !s.ok()) return Reply::of(error_response(s));
  auto shared = std::make_shared<const ChatRequest>(std::move(parsed).value());
  return PreparedReply::submit(ctx, false, [&ctx, shared](const std::atomic<bool>& cancelled) {
    std::string prompt;
    auto ids = chat_prompt_ids(ctx, *shared, cancelled, &prompt);
    if (!ids.ok()) return Reply::of(error_response(ids.status()));
    return Reply::of(request_json::json_response({{"input_tokens", ids->size()}}));
  });
}

}  // namespace sgl::server
