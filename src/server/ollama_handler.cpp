// Ollama's API, as SGLang serves it: POST /api/chat (the chat route's preparation), POST
// /api/generate (the raw prompt), GET /api/tags and POST /api/show (the served model), and on an
// embedding model POST /api/embed (Ollama's normalized vectors) and the older /api/embeddings.
// Replies are Ollama's objects; streams are newline-delimited JSON objects
// (application/x-ndjson), the last one `done: true` with the reason and the counts; errors are
// {"error": "message"} (the router rewrites this route's error responses, errors.h).
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "server/chat_submit.h"
#include "server/embedding_reply.h"
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

// Steady-clock seconds since its epoch (ChoiceStream's token times).
double steady_s(Clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

int64_t nanoseconds(double seconds) { return static_cast<int64_t>(seconds * 1e9); }

// One reply of /api/chat (`chat`: a message) or /api/generate (a `response` text).
class OllamaReply final : public GenerationReply {
 public:
  // `received`: when the request arrived (its durations count from there, as Ollama's do).
  OllamaReply(ServerContext& ctx, std::vector<std::unique_ptr<ChoiceStream>> choices, bool stream,
              std::string model, bool chat, Clock::time_point received)
      : GenerationReply(ctx, make_request_id("ollama-"), std::move(choices), stream),
        model_(std::move(model)),
        chat_(chat),
        received_s_(steady_s(received)) {}

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
        tool_calls.push_back({{"function",
                               {{"name", call.name},
                                {"arguments", request_json::arguments_object(call.arguments)}}}});
      }
      message["tool_calls"] = std::move(tool_calls);
    }
    o["message"] = std::move(message);
  }

  // done, the reason (stop, length; abort for a request the client aborted) and the counts:
  // durations in nanoseconds from the request's arrival to the first output token (the prompt's)
  // and from there to the last (the output's); the model is always loaded.
  void put_done(json& o) const {
    const std::string& reason = choice().finish().reason;
    const double end = steady_s(Clock::now());
    const double first = choice().first_token_s() > 0 ? choice().first_token_s() : end;
    const double last = choice().last_token_s() > 0 ? choice().last_token_s() : end;
    o["done"] = true;
    o["done_reason"] = reason == "length" || reason == "abort" ? reason : "stop";
    o["total_duration"] = nanoseconds(end - received_s_);
    o["load_duration"] = 0;
    o["prompt_eval_count"] = choice().prompt_tokens();
    o["prompt_eval_duration"] = nanoseconds(first - received_s_);
    o["eval_count"] = choice().completion_tokens();
    o["eval_duration"] = nanoseconds(last - first);
  }

  static std::string line(const json& o) { return request_json::dump(o) + "\n"; }

  std::string stream_delta(size_t, const ChoiceDelta& d) override {
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

  // A server's abort (a timeout, shutdown) mid-stream: Ollama's error line. (Before the stream,
  // GenerationReply's error response, which the router writes in Ollama's shape.)
  std::string stream_error(size_t, const ChoiceDelta&) override {
    return line({{"error", choice().finish().message}});
  }

  HttpResponse complete() override {
    json o = head();
    put(o, choice().total(), true);
    put_done(o);
    return request_json::json_response(o);
  }

  const std::string model_;
  const bool chat_;
  const double received_s_;
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

// Ollama's vector: the first `dimensions` values (all without), scaled to length 1.
json ollama_vector(const std::vector<float>& values, std::optional<int64_t> dimensions) {
  const size_t n =
      dimensions ? std::min(values.size(), static_cast<size_t>(*dimensions)) : values.size();
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(values[i]) * values[i];
  const double scale = sum > 0 ? 1 / std::sqrt(sum) : 1;
  json out = json::array();
  for (size_t i = 0; i < n; ++i) out.push_back(static_cast<float>(values[i] * scale));
  return out;
}

// On a pool thread: tokenizes (an input past the context cut to it where truncate allows),
// submits, and answers with Ollama's embed object.
Reply prepare_ollama_embed(ServerContext& ctx, const OllamaEmbedRequest& req,
                           Clock::time_point received) {
  std::vector<std::vector<int32_t>> ids;
  for (const PromptInput& input : req.embedding.inputs) {
    std::vector<int32_t> one = prompt_ids(ctx, input);
    // The engine takes prompts shorter than the context (one slot is left to generate into).
    const auto fits = static_cast<size_t>(std::max<int64_t>(ctx.info.context_length - 1, 1));
    if (req.truncate && one.size() > fits) one.resize(fits);
    ids.push_back(std::move(one));
  }
  auto streams = submit_encodes(ctx, std::move(ids), /*logged=*/true, std::nullopt);
  if (!streams.ok()) return Reply::of(error_response(streams.status()));
  const std::string model = req.embedding.model.value_or(ctx.info.served_model_name);
  auto format = [model, dimensions = req.embedding.dimensions, received, legacy = req.legacy](
                    const std::vector<Encoded>& results, double) {
    if (legacy) return request_json::json_response({{"embedding", results.at(0).embedding}});
    json embeddings = json::array();
    int64_t tokens = 0;
    for (const Encoded& r : results) {
      embeddings.push_back(ollama_vector(r.embedding, dimensions));
      tokens += r.prompt_tokens;
    }
    return request_json::json_response(
        {{"model", model},
         {"embeddings", std::move(embeddings)},
         {"total_duration",
          nanoseconds(std::chrono::duration<double>(Clock::now() - received).count())},
         {"load_duration", 0},
         {"prompt_eval_count", tokens}});
  };
  return Reply::later(std::make_unique<EmbeddingReply>(ctx, make_request_id("ollama-embed-"),
                                                       std::move(streams).value(), format),
                      false);
}

Reply ollama_embed_reply(ServerContext& ctx, Result<OllamaEmbedRequest> parsed,
                         Clock::time_point received) {
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  if (parsed->embedding.inputs.empty()) {  // the older route's empty prompt
    return Reply::of(request_json::json_response({{"embedding", json::array()}}));
  }
  if (parsed->embedding.dimensions && *parsed->embedding.dimensions > ctx.info.embedding_size()) {
    return Reply::of(error_response(
        400,
        "'dimensions' must be at most the model's " + std::to_string(ctx.info.embedding_size()),
        "dimensions"));
  }
  const std::string_view field = parsed->legacy ? "prompt" : "input";
  if (Status s = check_prompts(ctx, parsed->embedding.inputs, field); !s.ok()) {
    return Reply::of(error_response(s));
  }
  auto shared = std::make_shared<const OllamaEmbedRequest>(std::move(parsed).value());
  return PreparedReply::submit(ctx, false, [&ctx, shared, received](const std::atomic<bool>&) {
    return prepare_ollama_embed(ctx, *shared, received);
  });
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
  const Clock::time_point received = Clock::now();
  auto req = std::make_shared<const ChatRequest>(std::move(parsed).value());
  return ndjson(
      PreparedReply::submit(ctx, stream, [&ctx, req, received](const std::atomic<bool>& cancelled) {
        auto submitted = submit_chat(ctx, *req, cancelled);
        if (!submitted.ok()) return Reply::of(error_response(submitted.status()));
        return Reply::later(std::make_unique<OllamaReply>(
                                ctx, std::move(submitted->choices), req->stream,
                                req->model.value_or(ctx.info.served_model_name), true, received),
                            req->stream);
      }));
}

Reply handle_ollama_generate(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = parse_ollama_generate(request.body, ctx.sampling_defaults);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  const std::string model = parsed->model.value_or(ctx.info.served_model_name);
  if (parsed->prompts.empty()) return empty_generate(model, parsed->stream);
  if (Status s = check_prompts(ctx, parsed->prompts, "prompt"); !s.ok()) {
    return Reply::of(error_response(s));
  }
  const bool stream = parsed->stream;
  const Clock::time_point received = Clock::now();
  auto req = std::make_shared<const CompletionRequest>(std::move(parsed).value());
  return ndjson(
      PreparedReply::submit(ctx, stream, [&ctx, req, model, received](const std::atomic<bool>&) {
        auto built = build_engine_request(ctx, req->sampling, prompt_ids(ctx, req->prompts[0]), 0,
                                          std::nullopt);
        if (!built.ok()) return Reply::of(error_response(built.status()));
        std::vector<ChoicePlan> plans;
        plans.push_back({std::move(built).value(), choice_options(req->sampling, false)});
        auto choices = submit_choices(ctx, std::move(plans));
        if (!choices.ok()) return Reply::of(error_response(choices.status()));
        return Reply::later(std::make_unique<OllamaReply>(ctx, std::move(choices).value(),
                                                          req->stream, model, false, received),
                            req->stream);
      }));
}

namespace {

// The served model as Ollama's model lists show one (SGLang's fields: no size or digest is
// known).
json listed_model(const ServerContext& ctx) {
  const std::string& name = ctx.info.served_model_name;
  return {{"name", name},
          {"model", name},
          {"size", 0},
          {"digest", ""},
          {"details", {{"format", "sgl.cpp"}, {"family", ctx.info.model_type}}}};
}

}  // namespace

Reply handle_ollama_tags(ServerContext& ctx, const HttpRequest&) {
  json model = listed_model(ctx);
  model["modified_at"] = created_at();
  return Reply::of(request_json::json_response({{"models", json::array({model})}}));
}

// The running models (`ollama ps`): the served one, loaded for as long as the server runs, so
// it never expires (Ollama's keep_alive does not apply).
Reply handle_ollama_ps(ServerContext& ctx, const HttpRequest&) {
  json model = listed_model(ctx);
  model["expires_at"] = "9999-12-31T23:59:59Z";
  model["size_vram"] = 0;
  model["context_length"] = ctx.info.context_length;
  return Reply::of(request_json::json_response({{"models", json::array({model})}}));
}

// Ollama clients ask it to check that a server answers (the CLI compares it with its own).
Reply handle_ollama_version(ServerContext&, const HttpRequest&) {
  return Reply::of(request_json::json_response({{"version", kServerVersion}}));
}

Reply handle_ollama_embed(ServerContext& ctx, const HttpRequest& request) {
  const Clock::time_point received = Clock::now();
  return ollama_embed_reply(ctx, parse_ollama_embed(request.body), received);
}

Reply handle_ollama_embeddings(ServerContext& ctx, const HttpRequest& request) {
  const Clock::time_point received = Clock::now();
  return ollama_embed_reply(ctx, parse_ollama_embeddings(request.body), received);
}

// The served model's details: its context length, and what it can do here (completion, or
// embedding for an embedding model; tools with --tool-call-parser; thinking with
// --reasoning-parser), which Ollama clients read to offer those features.
Reply handle_ollama_show(ServerContext& ctx, const HttpRequest& request) {
  auto o = request_json::parse_object(request.body);
  if (!o.ok()) return Reply::of(error_response(o.status()));
  const json* model = request_json::find(*o, "model");
  if (!model || !model->is_string()) {
    return Reply::of(error_response(request_json::field_error("model", "must be a string")));
  }
  json capabilities = json::array();
  capabilities.push_back(ctx.info.is_generation ? "completion" : "embedding");
  if (ctx.info.is_generation && !ctx.info.tool_call_parser.empty()) capabilities.push_back("tools");
  if (ctx.info.is_generation && !ctx.info.reasoning_parser.empty()) {
    capabilities.push_back("thinking");
  }
  const std::string& arch = ctx.info.model_type;  // Ollama's family names ("llama", "qwen3")
  const int64_t context = ctx.info.context_length;
  return Reply::of(request_json::json_response(
      {{"modelfile", "FROM " + model->get<std::string>() + "\nPARAMETER num_ctx " +
                         std::to_string(context) + "\n"},
       {"parameters", "num_ctx " + std::to_string(context)},
       {"template", ""},
       {"modified_at", created_at()},
       {"details", {{"format", "sgl.cpp"}, {"family", arch}, {"families", json::array({arch})}}},
       {"model_info",
        {{"general.architecture", arch},
         {"general.name", *model},
         {arch + ".context_length", context}}},
       {"capabilities", std::move(capabilities)}}));
}

}  // namespace sgl::server
