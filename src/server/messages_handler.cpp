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

#include "server/anthropic_content.h"
#include "server/anthropic_json.h"
#include "server/chat_submit.h"
#include "server/engine_request.h"
#include "server/errors.h"
#include "server/generation_reply.h"
#include "server/handlers.h"
#include "server/prepared_reply.h"
#include "server/request_json.h"
#include "server/sse.h"
#include "server/thinking_switch.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;

std::string event_text(const char* name, const std::string& data) {
  return std::string("event: ") + name + "\n" + sse_data(data);
}

std::string event(const char* name, const json& data) {
  return event_text(name, request_json::dump(data));
}

enum class BlockType : uint8_t { kNone, kThinking, kText, kToolUse };

class MessagesReply final : public GenerationReply {
 public:
  // `reasoning`: the choice's reasoning is separated (it may open with a thinking block);
  // `tool_calls`: tool calls are parsed (the reply may be tool_use blocks only).
  // `rid`: the client's request id (SGLang's rid, passed through); empty: one is made up.
  MessagesReply(ServerContext& ctx, std::vector<std::unique_ptr<ChoiceStream>> choices, bool stream,
                std::string model, bool reasoning, bool tool_calls, const std::string& rid)
      : GenerationReply(ctx, reply_id(rid, "msg_"), std::move(choices), stream),
        model_(std::move(model)),
        text_first_(!reasoning && !tool_calls) {}

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

  static json thinking_block(const std::string& text) {
    return {{"type", "thinking"}, {"thinking", text}, {"signature", ""}};
  }

  // A tool call's block: its input the arguments' JSON object ({} where the output cut the
  // arguments short, as SGLang gives; stop_reason then says max_tokens).
  static json tool_use_block(const ToolCallDelta& call, json input) {
    if (!input.is_object()) input = json::object();
    return {{"type", "tool_use"},
            {"id", anthropic::tool_use_id(call.id)},
            {"name", call.name},
            {"input", std::move(input)}};
  }

  // Closes the open content block (if any) and opens `block` after it.
  std::string open_block(BlockType type, json block) {
    std::string out = close_block();
    open_ = type;
    out += event(
        "content_block_start",
        {{"type", "content_block_start"}, {"index", index_}, {"content_block", std::move(block)}});
    return out;
  }
  std::string open_text_block() {
    return open_block(BlockType::kText, {{"type", "text"}, {"text", ""}});
  }

  std::string close_block() {
    if (open_ == BlockType::kNone) return {};
    open_ = BlockType::kNone;
    return event("content_block_stop", {{"type", "content_block_stop"}, {"index", index_++}});
  }

  std::string stream_delta(size_t /*index*/, const ChoiceDelta& d) override {
    std::string out;
    if (!started_) {
      started_ = true;
      out += event("message_start",
                   {{"type", "message_start"}, {"message", message(json::array(), true)}});
      // Without reasoning or tool calls to parse, the text block opens at once: it always comes.
      if (text_first_) out += open_text_block();
      out += event("ping", {{"type", "ping"}});
    }
    if (!d.reasoning.empty()) {
      if (open_ != BlockType::kThinking)
        out += open_block(BlockType::kThinking, thinking_block(""));
      out += event("content_block_delta",
                   {{"type", "content_block_delta"},
                    {"index", index_},
                    {"delta", {{"type", "thinking_delta"}, {"thinking", d.reasoning}}}});
    }
    // A reply that made no other block ends with a text block, empty or not (as without a
    // parser).
    const bool text_block =
        !d.text.empty() || (d.finished && index_ == 0 && open_ == BlockType::kNone);
    if (text_block && open_ != BlockType::kText) out += open_text_block();
    if (!d.text.empty()) {
      out += event("content_block_delta", {{"type", "content_block_delta"},
                                           {"index", index_},
                                           {"delta", {{"type", "text_delta"}, {"text", d.text}}}});
    }
    for (const ToolCallDelta& call : d.tool_calls) {
      // A call's first delta names it: its own block, the input streamed as JSON text after.
      if (!call.name.empty()) out += open_block(BlockType::kToolUse, tool_use_block(call, {}));
      if (!call.arguments.empty() && open_ == BlockType::kToolUse) {
        out += event("content_block_delta",
                     {{"type", "content_block_delta"},
                      {"index", index_},
                      {"delta", {{"type", "input_json_delta"}, {"partial_json", call.arguments}}}});
      }
    }
    if (d.finished) {
      if (aborted()) return out + event_text("error", abort_error().body);
      const auto [reason, sequence] = stop();
      out += close_block();
      out +=
          event("message_delta", {{"type", "message_delta"},
                                  {"delta", {{"stop_reason", reason}, {"stop_sequence", sequence}}},
                                  {"usage", usage(false)}});
      out += event("message_stop", {{"type", "message_stop"}});
    }
    return out;
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
    const ChoiceDelta& total = choice().total();
    json content = json::array();
    if (!total.reasoning.empty()) content.push_back(thinking_block(total.reasoning));
    if (!total.text.empty() || (total.reasoning.empty() && total.tool_calls.empty())) {
      content.push_back({{"type", "text"}, {"text", total.text}});
    }
    for (const ToolCallDelta& call : total.tool_calls) {
      content.push_back(tool_use_block(call, json::parse(call.arguments, nullptr, false)));
    }
    return request_json::json_response(message(std::move(content)));
  }

  const std::string model_;
  const bool text_first_;  // the reply is text only: its block opens with the stream
  bool started_ = false;
  BlockType open_ = BlockType::kNone;  // the content block being streamed
  int index_ = 0;                      // its index (the next one's when none is open)
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
  if (Status s = check_thinking_switch(ctx, *parsed, "'thinking'"); !s.ok()) {
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
  static constexpr std::string_view kFields[] = {
      "model", "messages", "system", "thinking", "tools", "tool_choice", "output_config", "betas"};
  for (const auto& [key, value] : body.items()) {
    if (std::find(std::begin(kFields), std::end(kFields), key) == std::end(kFields)) {
      return Reply::of(error_response(
          400, "'" + key +
                   "' is not a count_tokens field (model, messages, system, thinking, "
                   "tools, tool_choice, output_config, betas)"));
    }
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
