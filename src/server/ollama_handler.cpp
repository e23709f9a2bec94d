// Ollama's API, as SGLang serves it: POST /api/chat (the chat route's preparation), POST
// /api/generate (the raw prompt), GET /api/tags and POST /api/show (the served model). Replies
// are Ollama's objects; streams are newline-delimited JSON objects (application/x-ndjson), the
// last one `done: true` with the reason and the counts; errors are {"error": "message"} (the
// router rewrites this route's error responses, errors.h).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/chat_submit.h"
#include "server/engine_request.h"
#include "server/errors.h"
#include "server/generation_reply.h"
#include "server/handlers.h"
#include "server/ollama_json.h"
#include "server/prepared_reply.h"
#include "server/request_json.h"
#include "server/thinking_switch.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

constexpr const char* kNdjson = "application/x-ndjson";

// Ollama's timestamps: UTC, milliseconds, "Z".
std::string created_at() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(ms));
  return buf;
}

int64_t nanoseconds(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

// One reply of /api/chat (`chat`: a message) or /api/generate (a `response` text).
class OllamaReply final : public GenerationReply {
 public:
  OllamaReply(ServerContext& ctx, std::vector<std::unique_ptr<ChoiceStream>> choices, bool stream,
              std::string model, bool chat)
      : GenerationReply(ctx, make_request_id("ollama-"), std::move(choices), stream),
        model_(std::move(model)),
        chat_(chat),
        start_(Clock::now()) {}

 private:
  const ChoiceStream& choice() const { return *choices_[0]; }

  json head() const { return {{"model", model_}, {"created_at", created_at()}}; }

  // The text (and, for chat, reasoning and calls) of `d` in Ollama's fields.
  void put(json& o, const ChoiceDelta& d, bool calls) const {
    if (!chat_) {
      o["response"] = d.text;
      return;
    }
    json message = {{"role", "assistant"}, {"content", d.text}};
    if (!d.reasoning.empty()) message["thinking"] = d.reasoning;
    if (calls && !choice().total().tool_calls.empty()) {
      json tool_calls = json::array();
      for (const ToolCallDelta& call : choice().total().tool_calls) {
        json arguments = json::parse(call.arguments, nullptr, false);
        if (!arguments.is_object()) arguments = json::object();  // cut short
        tool_calls.push_back({{"function", {{"name", call.name}, {"arguments", arguments}}}});
      }
      message["tool_calls"] = std::move(tool_calls);
    }
    o["message"] = std::move(message);
  }

  // done, the reason and the counts (durations in nanoseconds; the model is always loaded).
  void put_done(json& o) const {
    const Clock::time_point end = Clock::now();
    const Clock::time_point first = first_token_.value_or(end);
    o["done"] = true;
    o["done_reason"] = choice().finish().reason == "length" ? "length" : "stop";
    o["total_duration"] = nanoseconds(end - start_);
    o["load_duration"] = 0;
    o["prompt_eval_count"] = choice().prompt_tokens();
    o["prompt_eval_duration"] = nanoseconds(first - start_);
    o["eval_count"] = choice().completion_tokens();
    o["eval_duration"] = nanoseconds(end - first);
  }

  static std::string line(const json& o) { return request_json::dump(o) + "\n"; }

  std::string stream_delta(size_t, const ChoiceDelta& d) override {
    if (!first_token_ && !d.token_ids.empty()) first_token_ = Clock::now();
    std::string out;
    if (!d.text.empty() || !d.reasoning.empty()) {
      json o = head();
      put(o, d, false);
      o["done"] = false;
      out += line(o);
    }
    if (!d.finished) return out;
    if (chat_ && !choice().total().tool_calls.empty()) {
      // Ollama sends the calls whole, in a message of their own.
      json o = head();
      put(o, ChoiceDelta{}, true);
      o["done"] = false;
      out += line(o);
    }
    json o = head();
    put(o, ChoiceDelta{}, false);
    put_done(o);
    return out + line(o);
  }

  std::string stream_end() override { return {}; }

  std::string stream_error(size_t, const ChoiceDelta&) override {
    return line({{"error", choice().finish().message}});
  }
  HttpResponse error_reply(const FinishInfo& f) override {
    HttpResponse r = error_response(f.status >= 400 ? f.status : 500, f.message);
    reshape_as_ollama_error(r);
    return r;
  }

  HttpResponse complete() override {
    if (choice().finish().reason == "abort") return error_reply(choice().finish());
    if (!first_token_) first_token_ = Clock::now();  // not streamed: no first-token time
    json o = head();
    put(o, choice().total(), true);
    put_done(o);
    return request_json::json_response(o);
  }

  const std::string model_;
  const bool chat_;
  const Clock::time_point start_;
  std::optional<Clock::time_point> first_token_;
};

Reply ndjson(Reply reply) {
  reply.stream_content_type = kNdjson;
  return reply;
}

// A reply with nothing generated (a blank /api/generate prompt): done at once.
Reply empty_generate(const std::string& model, bool stream) {
  const json o = {{"model", model},
                  {"created_at", created_at()},
                  {"response", ""},
                  {"done", true},
                  {"done_reason", "stop"}};
  HttpResponse r = request_json::json_response(o);
  if (stream) {
    r.content_type = kNdjson;
    r.body = request_json::dump(o) + "\n";
  }
  return Reply::of(std::move(r));
}

}  // namespace

Reply handle_ollama_chat(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = parse_ollama_chat(request.body, ctx.sampling_defaults);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  if (Status s = check_chat_template(ctx); !s.ok()) return Reply::of(error_response(s));
  if (Status s = check_thinking_switch(ctx, *parsed, "'think'"); !s.ok()) {
    return Reply::of(error_response(s));
  }
  const bool stream = parsed->stream;
  auto req = std::make_shared<const ChatRequest>(std::move(parsed).value());
  return ndjson(PreparedReply::submit(ctx, stream, [&ctx, req](const std::atomic<bool>& cancelled) {
    auto submitted = submit_chat(ctx, *req, cancelled);
    if (!submitted.ok()) return Reply::of(error_response(submitted.status()));
    return Reply::later(
        std::make_unique<OllamaReply>(ctx, std::move(submitted->choices), req->stream,
                                      req->model.value_or(ctx.info.served_model_name), true),
        req->stream);
  }));
}

Reply handle_ollama_generate(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = parse_ollama_generate(request.body, ctx.sampling_defaults);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  const std::string model = parsed->model.value_or(ctx.info.served_model_name);
  if (parsed->prompts.empty()) return empty_generate(model, parsed->stream);
  if (Status s = check_text_length(ctx, parsed->prompts, "prompt"); !s.ok()) {
    return Reply::of(error_response(s));
  }
  const bool stream = parsed->stream;
  auto req = std::make_shared<const CompletionRequest>(std::move(parsed).value());
  return ndjson(PreparedReply::submit(ctx, stream, [&ctx, req, model](const std::atomic<bool>&) {
    auto built =
        build_engine_request(ctx, req->sampling, prompt_ids(ctx, req->prompts[0]), 0, std::nullopt);
    if (!built.ok()) return Reply::of(error_response(built.status()));
    std::vector<ChoicePlan> plans;
    plans.push_back({std::move(built).value(), choice_options(req->sampling, false)});
    auto choices = submit_choices(ctx, std::move(plans));
    if (!choices.ok()) return Reply::of(error_response(choices.status()));
    return Reply::later(
        std::make_unique<OllamaReply>(ctx, std::move(choices).value(), req->stream, model, false),
        req->stream);
  }));
}

// The served model, as Ollama lists its models (SGLang's fields: no size or digest is known).
Reply handle_ollama_tags(ServerContext& ctx, const HttpRequest&) {
  const std::string& name = ctx.info.served_model_name;
  return Reply::of(request_json::json_response(
      {{"models",
        json::array({{{"name", name},
                      {"model", name},
                      {"modified_at", created_at()},
                      {"size", 0},
                      {"digest", ""},
                      {"details", {{"format", "sgl.cpp"}, {"family", ctx.info.model_type}}}}})}}));
}

// The served model's details: its context length, and what it can do here (completion; tools
// with --tool-call-parser; thinking with --reasoning-parser), which Ollama clients read to offer
// those features.
Reply handle_ollama_show(ServerContext& ctx, const HttpRequest& request) {
  auto o = request_json::parse_object(request.body);
  if (!o.ok()) return Reply::of(error_response(o.status()));
  const json* model = request_json::find(*o, "model");
  if (!model || !model->is_string()) {
    return Reply::of(error_response(request_json::field_error("model", "must be a string")));
  }
  json capabilities = json::array({"completion"});
  if (!ctx.info.tool_call_parser.empty()) capabilities.push_back("tools");
  if (!ctx.info.reasoning_parser.empty()) capabilities.push_back("thinking");
  const std::string& arch = ctx.info.model_type;  // Ollama's family names ("llama", "qwen3")
  const int64_t context = ctx.info.context_length;
  return Reply::of(request_json::json_response(
      {{"modelfile", "FROM " + ctx.info.served_model_name + "\nPARAMETER num_ctx " +
                         std::to_string(context) + "\n"},
       {"parameters", "num_ctx " + std::to_string(context)},
       {"template", ""},
       {"modified_at", created_at()},
       {"details", {{"format", "sgl.cpp"}, {"family", arch}, {"families", json::array({arch})}}},
       {"model_info",
        {{"general.architecture", arch},
         {"general.name", ctx.info.served_model_name},
         {arch + ".context_length", context}}},
       {"capabilities", std::move(capabilities)}}));
}

}  // namespace sgl::server
