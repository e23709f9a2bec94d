// POST /v1/responses: the OpenAI Responses API over the chat route's preparation — output items
// (a reasoning item with one reasoning_text part for the model's thinking, with
// --reasoning-parser; messages with one output_text part; function_call items for parsed tool
// calls), status
// completed / incomplete (max_output_tokens), the Responses usage, and its named stream events,
// each with a sequence number.
#include <algorithm>
#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/check.h"
#include "server/background_responses.h"
#include "server/chat_submit.h"
#include "server/engine_request.h"
#include "server/errors.h"
#include "server/generation_reply.h"
#include "server/handlers.h"
#include "server/prepared_reply.h"
#include "server/request_json.h"
#include "server/responses_json.h"
#include "server/sse.h"
#include "server/thinking_switch.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;

class ResponsesReply final : public GenerationReply {
 public:
  ResponsesReply(ServerContext& ctx, std::vector<std::unique_ptr<ChoiceStream>> choices,
                 std::shared_ptr<const ResponsesRequest> req, std::string model)
      : GenerationReply(ctx, reply_id(req->chat.routing.rid, "resp_"), std::move(choices),
                        req->chat.stream),
        req_(std::move(req)),
        model_(std::move(model)) {}

  const std::string& id() const { return id_; }

  // A background response before its end: the response object with `status` (queued,
  // in_progress or cancelled) and no output, kept in the store with the input it has so far.
  json store_unfinished(const char* status) {
    json r = response(false);
    r["status"] = status;
    put_in_store(r, req_->input_items_json);
    return r;
  }

  // A background response the server ended with an error (`body`, the route's error response):
  // failed, with that error's message.
  void store_failed(const std::string& body) {
    json r = response(false);
    r["status"] = "failed";
    const json error = json::parse(body, nullptr, false);
    const json* message = error.is_object() && error.contains("error") && error["error"].is_object()
                              ? request_json::find(error["error"], "message")
                              : nullptr;
    r["error"] = {{"code", "server_error"},
                  {"message", message && message->is_string() ? *message : json(body)}};
    put_in_store(r, req_->input_items_json);
  }

 private:
  // `r` stored with the conversation so far: the previous turns', then `turn_items` (JSON).
  void put_in_store(const json& r, std::string turn_items) {
    ctx_.response_store.put(id_, {request_json::dump(r),
                                  std::make_shared<const ConversationTurn>(
                                      ConversationTurn{req_->previous_turn, std::move(turn_items)}),
                                  r.at("status").get<std::string>()});
  }

  enum class Kind : uint8_t { kReasoning, kMessage, kCall };

  // One output item: the reasoning (its text), a message (its text) or a function call (its
  // arguments), in the order the choice produced them.
  struct Item {
    Kind kind = Kind::kMessage;
    std::string id;       // rs_... / msg_... / fc_...
    std::string text;     // reasoning text, message text or call arguments
    std::string call_id;  // call_...
    std::string name;
    int32_t call_index = -1;
    bool done = false;
    // Once done: completed when a later item followed it, else the response's status.
    const char* final_status = "in_progress";
  };

  const ChoiceStream& choice() const { return *choices_[0]; }
  bool aborted() const { return choice().finished() && choice().finish().reason == "abort"; }
  bool truncated() const { return choice().finished() && choice().finish().reason == "length"; }

  // in_progress until the choice finishes; then completed, or incomplete at the token limit.
  const char* status() const {
    if (!choice().finished()) return "in_progress";
    if (aborted()) return "failed";
    return truncated() ? "incomplete" : "completed";
  }

  // The logprobs of `d`'s tokens when they were asked for (include), else [].
  json logprobs(const ChoiceDelta& d) const {
    return req_->chat.logprobs ? request_json::token_logprobs(d) : json::array();
  }

  json text_part(const std::string& text, json logprobs = json::array()) const {
    return {{"type", "output_text"},
            {"text", text},
            {"annotations", json::array()},
            {"logprobs", std::move(logprobs)}};
  }

  // The first message item carries the logprobs of the whole output.
  json item_json(const Item& item, bool with_content) const {
    const char* item_status = item.final_status;
    if (item.kind == Kind::kReasoning) {
      json content = json::array();
      if (with_content) content.push_back(reasoning_part(item.text));
      return {{"id", item.id},
              {"type", "reasoning"},
              {"summary", json::array()},
              {"content", std::move(content)},
              {"status", item_status}};
    }
    if (item.kind == Kind::kCall) {
      return {{"id", item.id},           {"type", "function_call"},
              {"status", item_status},   {"arguments", with_content ? item.text : ""},
              {"call_id", item.call_id}, {"name", item.name}};
    }
    json content = json::array();
    if (with_content) {
      const bool first = &item == &*std::find_if(items_.begin(), items_.end(), [](const Item& i) {
        return i.kind == Kind::kMessage;
      });
      content.push_back(text_part(item.text, first ? logprobs(choice().total()) : json::array()));
    }
    return {{"id", item.id},
            {"type", "message"},
            {"status", item_status},
            {"role", "assistant"},
            {"content", std::move(content)}};
  }

  static json reasoning_part(const std::string& text) {
    return {{"type", "reasoning_text"}, {"text", text}};
  }

  json usage() const {
    const int64_t input = choice().prompt_tokens(), output = choice().completion_tokens();
    return {{"input_tokens", input},
            {"input_tokens_details", {{"cached_tokens", choice().cached_tokens()}}},
            {"output_tokens", output},
            {"output_tokens_details", {{"reasoning_tokens", choice().reasoning_tokens()}}},
            {"total_tokens", input + output}};
  }

  // The response object; `final`: with the output items and usage.
  json response(bool final) const {
    const SamplingInput& s = req_->chat.sampling;
    json r = {
        {"id", id_},
        {"object", "response"},
        {"created_at", created_},
        {"status", final ? status() : "in_progress"},
        {"background", req_->background},
        {"error", nullptr},
        {"incomplete_details", nullptr},
        {"instructions", nullptr},
        {"max_output_tokens", nullptr},
        {"model", model_},
        {"output", json::array()},
        {"parallel_tool_calls", req_->chat.parallel_tool_calls},
        {"previous_response_id",
         req_->previous_response_id.empty() ? json(nullptr) : json(req_->previous_response_id)},
        {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
        {"service_tier", "default"},
        {"store", req_->store},
        {"temperature", s.temperature},
        {"text", json::parse(req_->text_json)},
        {"tool_choice", json::parse(req_->tool_choice_json)},
        {"tools", json::parse(req_->tools_json)},
        {"top_p", s.top_p},
        {"truncation", "disabled"},
        {"usage", nullptr},
        {"user", nullptr},
        {"metadata", json::parse(req_->metadata_json)}};
    if (req_->instructions) r["instructions"] = *req_->instructions;
    if (req_->max_output_tokens) r["max_output_tokens"] = *req_->max_output_tokens;
    if (req_->user) r["user"] = *req_->user;
    if (req_->reasoning_effort) r["reasoning"]["effort"] = *req_->reasoning_effort;
    if (final) {
      if (truncated()) r["incomplete_details"] = {{"reason", "max_output_tokens"}};
      if (aborted()) {
        r["error"] = {{"code", "server_error"}, {"message", choice().finish().message}};
      } else {
        for (const Item& item : items_) r["output"].push_back(item_json(item, true));
      }
      r["usage"] = usage();
    }
    return r;
  }

  // One named event; every event carries its type and the stream's next sequence number.
  std::string event(const char* type, json data) {
    json e = {{"type", type}, {"sequence_number", sequence_++}};
    for (auto& [key, value] : data.items()) e[key] = std::move(value);
    return std::string("event: ") + type + "\n" + sse_data(request_json::dump(e));
  }

  json part_position(size_t index) const {
    return {{"item_id", items_[index].id}, {"output_index", index}, {"content_index", 0}};
  }

  static Item new_item(Kind kind) {
    Item item;
    item.kind = kind;
    item.id = make_request_id(kind == Kind::kReasoning ? "rs_" : "msg_");
    return item;
  }

  // Opens a new output item (closing the one before it); streams its "added" events.
  std::string open_item(Item item) {
    std::string out = close_last(true);
    items_.push_back(std::move(item));
    const size_t index = items_.size() - 1;
    if (!streaming_) return out;
    out += event("response.output_item.added",
                 {{"output_index", index}, {"item", item_json(items_[index], false)}});
    if (items_[index].kind != Kind::kCall) {
      json part = part_position(index);
      part["part"] = items_[index].kind == Kind::kReasoning ? reasoning_part("") : text_part("");
      out += event("response.content_part.added", std::move(part));
    }
    return out;
  }

  // Closes the last output item (`superseded`: a later one begins, so it is complete whatever the
  // response's end); streams its "done" events.
  std::string close_last(bool superseded) {
    if (items_.empty() || items_.back().done) return {};
    Item& item = items_.back();
    item.done = true;
    item.final_status = superseded ? "completed" : status();
    if (!streaming_) return {};
    const size_t index = items_.size() - 1;
    std::string out;
    if (item.kind == Kind::kReasoning) {
      json done = part_position(index);
      done["text"] = item.text;
      out += event("response.reasoning_text.done", std::move(done));
      json part = part_position(index);
      part["part"] = reasoning_part(item.text);
      out += event("response.content_part.done", std::move(part));
    } else if (item.kind == Kind::kCall) {
      out += event("response.function_call_arguments.done", {{"item_id", item.id},
                                                             {"output_index", index},
                                                             {"name", item.name},
                                                             {"arguments", item.text}});
    } else {
      const json full = item_json(item, true);
      json done = part_position(index);
      done["text"] = item.text;
      done["logprobs"] = full["content"][0]["logprobs"];
      out += event("response.output_text.done", std::move(done));
      json part = part_position(index);
      part["part"] = full["content"][0];
      out += event("response.content_part.done", std::move(part));
    }
    out += event("response.output_item.done",
                 {{"output_index", index}, {"item", item_json(item, true)}});
    return out;
  }

  // More of a call's arguments, to that call's item (the open one: add() keeps the order).
  std::string add_arguments(const ToolCallDelta& call) {
    if (call.arguments.empty()) return "";
    size_t at = items_.size();
    while (at > 0 &&
           !(items_[at - 1].kind == Kind::kCall && items_[at - 1].call_index == call.index)) {
      --at;
    }
    SGL_CHECK(at > 0) << "arguments of call " << call.index << " before the call";
    --at;
    items_[at].text += call.arguments;
    if (!streaming_) return "";
    return event("response.function_call_arguments.delta",
                 {{"item_id", items_[at].id}, {"output_index", at}, {"delta", call.arguments}});
  }

  // Adds a delta to the output items (streaming: with its events).
  std::string add(const ChoiceDelta& d) {
    std::string out;
    // NOTE: a delta's reasoning is placed before its text: reasoning parsers put it first.
    if (!d.reasoning.empty()) {
      if (items_.empty() || items_.back().kind != Kind::kReasoning) {
        out += open_item(new_item(Kind::kReasoning));
      }
      items_.back().text += d.reasoning;
      if (streaming_) {
        json delta = part_position(items_.size() - 1);
        delta["delta"] = d.reasoning;
        out += event("response.reasoning_text.delta", std::move(delta));
      }
    }
    // Argument pieces without an id continue a call begun in an earlier delta: they come before
    // this delta's text (a parser writes text only outside calls), so they go first.
    for (const ToolCallDelta& call : d.tool_calls) {
      if (call.id.empty()) out += add_arguments(call);
    }
    if (!d.text.empty()) {
      if (items_.empty() || items_.back().kind != Kind::kMessage) {
        out += open_item(new_item(Kind::kMessage));
      }
      items_.back().text += d.text;
      if (streaming_) {
        json delta = part_position(items_.size() - 1);
        delta["delta"] = d.text;
        delta["logprobs"] = logprobs(d);
        out += event("response.output_text.delta", std::move(delta));
      }
    }
    for (const ToolCallDelta& call : d.tool_calls) {
      if (call.id.empty()) continue;
      Item item;
      item.kind = Kind::kCall;
      item.id = make_request_id("fc_");
      item.call_id = call.id;
      item.name = call.name;
      item.call_index = call.index;
      out += open_item(std::move(item));
      out += add_arguments(call);
    }
    if (d.finished) {
      // A response always has an output item: an empty message when nothing was produced.
      if (items_.empty() && !aborted()) out += open_item(new_item(Kind::kMessage));
      if (!aborted()) out += close_last(false);
    }
    return out;
  }

  std::string stream_delta(size_t /*index*/, const ChoiceDelta& d) override {
    std::string out;
    if (!started_) {
      started_ = true;
      out += event("response.created", {{"response", response(false)}});
      out += event("response.in_progress", {{"response", response(false)}});
    }
    out += add(d);
    if (d.finished) {
      if (aborted()) return out + event("response.failed", {{"response", response(true)}});
      out += event(truncated() ? "response.incomplete" : "response.completed",
                   {{"response", stored(response(true))}});
    }
    return out;
  }

  // A finished response, kept in the response store when the request asked (store): with the
  // conversation it ends (the previous response's, then a turn of its input items and its output
  // items), for previous_response_id.
  // A reasoning item that no message or call followed (the limit cut the thinking short) is left
  // out of the conversation, which a next turn could not follow; logprobs too (no input reads
  // them).
  json stored(json final_response) {
    if (!req_->store) return final_response;
    json turn = json::parse(req_->input_items_json);
    size_t kept = items_.size();
    while (kept > 0 && items_[kept - 1].kind == Kind::kReasoning) --kept;
    for (size_t i = 0; i < kept; ++i) {
      json item = item_json(items_[i], true);
      if (json* content = request_json::find_mutable(item, "content");
          content && content->is_array()) {
        for (json& part : *content) part.erase("logprobs");
      }
      turn.push_back(std::move(item));
    }
    put_in_store(final_response, request_json::dump(turn));
    return final_response;
  }

  std::string stream_end() override { return {}; }  // the terminal event ended it (no [DONE])
  // response.failed, as for any abort.
  std::string stream_error(size_t index, const ChoiceDelta& d) override {
    return stream_delta(index, d);
  }

  // An aborted response is a response, as SGLang and the Responses API make it: status failed,
  // `error` saying why, no output (one the server aborted is an error response:
  // GenerationReply::error_reply).
  HttpResponse complete() override {
    // NOTE: the non-streaming reply reads the whole output at once, as one delta.
    add(choice().total());
    return request_json::json_response(stored(response(true)));
  }

  const std::shared_ptr<const ResponsesRequest> req_;
  const std::string model_;
  const bool streaming_ = req_->chat.stream;
  std::vector<Item> items_;
  bool started_ = false;
  int64_t sequence_ = 0;
};

// background: the reply runs on the server's background driver; the client gets it queued and
// follows it in the store: in_progress once it runs, then its end (stored by the reply, as any
// stored response), failed when the server ends it, cancelled when a cancel aborts it.
Reply run_in_background(ServerContext& ctx, std::unique_ptr<ResponsesReply> reply) {
  ResponsesReply* unfinished = reply.get();  // the callbacks run while the driver holds it
  const std::string id = reply->id();
  json queued = reply->store_unfinished("queued");
  BackgroundResponses::Callbacks callbacks;
  callbacks.started = [unfinished] { unfinished->store_unfinished("in_progress"); };
  callbacks.done = [unfinished](HttpResponse response) {
    if (response.status != 200) unfinished->store_failed(response.body);
  };
  callbacks.cancelled = [unfinished] { unfinished->store_unfinished("cancelled"); };
  if (Status s = ctx.background_responses.run(id, std::move(reply), std::move(callbacks));
      !s.ok()) {
    ctx.response_store.remove(id);
    return Reply::of(error_response(s));
  }
  return Reply::of(request_json::json_response(queued));
}

Reply prepare_responses(ServerContext& ctx, std::shared_ptr<const ResponsesRequest> req,
                        const std::atomic<bool>& cancelled) {
  auto claim = ctx.registry.claim(client_request_ids(req->chat.routing));
  if (!claim.ok()) return Reply::of(error_response(claim.status()));
  auto submitted = submit_chat(ctx, req->chat, cancelled);
  if (!submitted.ok()) return Reply::of(error_response(submitted.status()));
  std::string model = req->chat.model.value_or(ctx.info.served_model_name);
  const bool stream = req->chat.stream;
  const bool background = req->background && !stream;
  auto reply = std::make_unique<ResponsesReply>(ctx, std::move(submitted->choices), std::move(req),
                                                std::move(model));
  if (!background) return Reply::later(std::move(reply), stream);
  return run_in_background(ctx, std::move(reply));
}

}  // namespace

// The body is parsed here, and read into the request on the work pool: a previous_response_id
// puts a stored conversation, which may be far longer than any body, before its input.
Reply handle_responses(ServerContext& ctx, const HttpRequest& request) {
  auto o = request_json::parse_object(request.body);
  if (!o.ok()) return Reply::of(error_response(o.status()));
  const json* stream = request_json::find(*o, "stream");
  const bool event_stream = stream && *stream == true;
  auto body = std::make_shared<json>(std::move(o).value());
  return PreparedReply::submit(ctx, event_stream, [&ctx, body](const std::atomic<bool>& cancelled) {
    auto parsed = request_json::parse_responses_object(
        std::move(*body), ctx.sampling_defaults,
        ctx.info.enable_response_store ? &ctx.response_store : nullptr);
    if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
    if (Status s = check_chat_template(ctx); !s.ok()) return Reply::of(error_response(s));
    if (Status s = check_thinking_switch(ctx, parsed->chat, "'reasoning.effort'"); !s.ok()) {
      return Reply::of(error_response(s));
    }
    return prepare_responses(
        ctx, std::make_shared<const ResponsesRequest>(std::move(parsed).value()), cancelled);
  });
}

namespace {

HttpResponse stored_response(const ServerContext& ctx, const std::string& id) {
  const auto stored = ctx.response_store.get(id);
  if (!stored) return error_response(404, "response '" + id + "' is not stored");
  HttpResponse r;
  r.body = stored->response_json;
  return r;
}

}  // namespace

// GET /v1/responses/{id}: a stored response; DELETE removes it (OpenAI's, with
// --enable-response-store); POST /v1/responses/{id}/cancel aborts a background response still
// running and answers the stored one.
Reply handle_stored_response(ServerContext& ctx, const HttpRequest& request) {
  constexpr std::string_view kPrefix = "/v1/responses/";
  std::string id = request.path.substr(kPrefix.size());
  // POST .../cancel: a response that has ended is answered as it is (SGLang's).
  const size_t slash = id.find('/');
  const bool cancel = slash != std::string::npos && id.substr(slash) == "/cancel";
  constexpr std::string_view kServed =
      " (GET and DELETE /v1/responses/{id}, POST /v1/responses/{id}/cancel are; input_items is "
      "not built)";
  if (slash != std::string::npos && !cancel) {
    return Reply::of(
        error_response(404, "'" + request.path + "' is not supported" + std::string(kServed)));
  }
  if (cancel != (request.method == "POST")) {
    HttpResponse r = error_response(
        405, request.method + " '" + request.path + "' is not supported" + std::string(kServed));
    r.headers.emplace_back("Allow", cancel ? "POST" : "GET, DELETE");
    return Reply::of(std::move(r));
  }
  if (cancel) id.resize(slash);
  if (!ctx.info.enable_response_store) {
    return Reply::of(error_response(
        400, "the response store is disabled: start the server with --enable-response-store"));
  }
  if (request.method == "GET") return Reply::of(stored_response(ctx, id));
  // A background response still running is aborted first (cancel: its status becomes cancelled;
  // DELETE: then it goes). The abort waits for the background driver: on the admin pool.
  const bool remove = request.method == "DELETE";
  return on_admin_pool(ctx, [&ctx, id, remove] {
    ctx.background_responses.cancel(id);
    if (!remove) return Reply::of(stored_response(ctx, id));
    if (!ctx.response_store.remove(id)) {
      return Reply::of(error_response(404, "response '" + id + "' is not stored"));
    }
    return Reply::of(request_json::json_response(
        {{"id", id}, {"object", "response.deleted"}, {"deleted", true}}));
  });
}

}  // namespace sgl::server
