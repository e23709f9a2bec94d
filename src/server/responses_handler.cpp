// POST /v1/responses: the OpenAI Responses API over the chat route's preparation — one output
// message with one output_text part, status completed / incomplete (max_output_tokens), the
// Responses usage, and its named stream events, each with a sequence number.
#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "server/chat_submit.h"
#include "server/engine_request.h"
#include "server/errors.h"
#include "server/generation_reply.h"
#include "server/handlers.h"
#include "server/prepared_reply.h"
#include "server/request_json.h"
#include "server/responses_json.h"
#include "server/sse.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;

class ResponsesReply final : public GenerationReply {
 public:
  ResponsesReply(ServerContext& ctx, std::vector<std::unique_ptr<ChoiceStream>> choices,
                 std::shared_ptr<const ResponsesRequest> req, std::string model)
      : GenerationReply(ctx, make_request_id("resp_"), std::move(choices), req->chat.stream),
        req_(std::move(req)),
        model_(std::move(model)),
        message_id_(make_request_id("msg_")) {}

 private:
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

  json message_item(bool with_text) const {
    json content = json::array();
    if (with_text) content.push_back(text_part(choice().total().text, logprobs(choice().total())));
    return {{"id", message_id_},
            {"type", "message"},
            {"status", with_text ? status() : "in_progress"},
            {"role", "assistant"},
            {"content", std::move(content)}};
  }

  json usage() const {
    const int64_t input = choice().prompt_tokens(), output = choice().completion_tokens();
    return {{"input_tokens", input},
            {"input_tokens_details", {{"cached_tokens", choice().cached_tokens()}}},
            {"output_tokens", output},
            {"output_tokens_details", {{"reasoning_tokens", 0}}},
            {"total_tokens", input + output}};
  }

  // The response object; `final`: with the output message and usage.
  json response(bool final) const {
    const SamplingInput& s = req_->chat.sampling;
    json r = {{"id", id_},
              {"object", "response"},
              {"created_at", created_},
              {"status", final ? status() : "in_progress"},
              {"background", false},
              {"error", nullptr},
              {"incomplete_details", nullptr},
              {"instructions", nullptr},
              {"max_output_tokens", nullptr},
              {"model", model_},
              {"output", json::array()},
              {"parallel_tool_calls", true},
              {"previous_response_id", nullptr},
              {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
              {"service_tier", "default"},
              {"store", false},
              {"temperature", s.temperature},
              {"text", {{"format", {{"type", "text"}}}}},
              {"tool_choice", "auto"},
              {"tools", json::array()},
              {"top_p", s.top_p},
              {"truncation", "disabled"},
              {"usage", nullptr},
              {"user", nullptr},
              {"metadata", json::parse(req_->metadata_json)}};
    if (req_->instructions) r["instructions"] = *req_->instructions;
    if (req_->max_output_tokens) r["max_output_tokens"] = *req_->max_output_tokens;
    if (req_->user) r["user"] = *req_->user;
    if (final) {
      if (truncated()) r["incomplete_details"] = {{"reason", "max_output_tokens"}};
      if (aborted()) {
        r["error"] = {{"code", "server_error"}, {"message", choice().finish().message}};
      } else {
        r["output"].push_back(message_item(true));
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

  json part_position() const {
    return {{"item_id", message_id_}, {"output_index", 0}, {"content_index", 0}};
  }

  std::string stream_delta(size_t /*index*/, const ChoiceDelta& d) override {
    std::string out;
    if (!started_) {
      started_ = true;
      out += event("response.created", {{"response", response(false)}});
      out += event("response.in_progress", {{"response", response(false)}});
      out +=
          event("response.output_item.added", {{"output_index", 0}, {"item", message_item(false)}});
      json part = part_position();
      part["part"] = text_part("");
      out += event("response.content_part.added", std::move(part));
    }
    if (!d.text.empty()) {
      json delta = part_position();
      delta["delta"] = d.text;
      delta["logprobs"] = logprobs(d);
      out += event("response.output_text.delta", std::move(delta));
    }
    if (d.finished) {
      if (aborted()) return out + event("response.failed", {{"response", response(true)}});
      const std::string& text = choice().total().text;
      json done = part_position();
      done["text"] = text;
      done["logprobs"] = logprobs(choice().total());
      out += event("response.output_text.done", std::move(done));
      json part = part_position();
      part["part"] = text_part(text, logprobs(choice().total()));
      out += event("response.content_part.done", std::move(part));
      out +=
          event("response.output_item.done", {{"output_index", 0}, {"item", message_item(true)}});
      out += event(truncated() ? "response.incomplete" : "response.completed",
                   {{"response", response(true)}});
    }
    return out;
  }

  std::string stream_end() override { return {}; }  // the terminal event ended it (no [DONE])

  HttpResponse complete() override {
    if (aborted()) return error_response(500, choice().finish().message);
    return request_json::json_response(response(true));
  }

  const std::shared_ptr<const ResponsesRequest> req_;
  const std::string model_;
  const std::string message_id_;
  bool started_ = false;
  int64_t sequence_ = 0;
};

Reply prepare_responses(ServerContext& ctx, std::shared_ptr<const ResponsesRequest> req,
                        const std::atomic<bool>& cancelled) {
  auto submitted = submit_chat(ctx, req->chat, cancelled);
  if (!submitted.ok()) return Reply::of(error_response(submitted.status()));
  std::string model = req->chat.model.value_or(ctx.info.served_model_name);
  const bool stream = req->chat.stream;
  return Reply::later(std::make_unique<ResponsesReply>(ctx, std::move(submitted->choices),
                                                       std::move(req), std::move(model)),
                      stream);
}

}  // namespace

Reply handle_responses(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = parse_responses_request(request.body, ctx.sampling_defaults);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  if (Status s = check_chat_template(ctx); !s.ok()) return Reply::of(error_response(s));
  const bool stream = parsed->chat.stream;
  auto shared = std::make_shared<const ResponsesRequest>(std::move(parsed).value());
  return PreparedReply::submit(ctx, stream, [&ctx, shared](const std::atomic<bool>& cancelled) {
    return prepare_responses(ctx, shared, cancelled);
  });
}

}  // namespace sgl::server
