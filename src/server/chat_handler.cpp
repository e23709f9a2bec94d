// POST /v1/chat/completions: messages through the chat template, n choices, logprobs,
// streaming deltas.
#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "server/chat_submit.h"
#include "server/engine_request.h"
#include "server/errors.h"
#include "server/generation_reply.h"
#include "server/handlers.h"
#include "server/hidden_states_json.h"
#include "server/lora_request.h"
#include "server/openai_json.h"
#include "server/prepared_reply.h"
#include "server/request_json.h"
#include "server/sglext_json.h"
#include "server/sse.h"
#include "server/thinking_switch.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;

class ChatReply final : public GenerationReply {
 public:
  struct Setup {
    std::string model;
    bool logprobs = false;
    bool include_usage = false;
    bool continuous_usage = false;  // the usage so far in every chunk
    bool reasoning = false;         // --reasoning-parser: messages list reasoning_content
    // SGLang's stream_reasoning: false holds the reasoning back and streams it in one chunk
    // once it ends (the content or a tool call begins, or the reply finishes).
    bool stream_reasoning = true;
    int64_t prompt_tokens = 0;
    // return_prompt_token_ids / return_token_ids: the prompt's ids, listed in each choice.
    std::optional<std::vector<int32_t>> prompt_token_ids;
    bool response_token_ids = false;  // return_token_ids
    HiddenStatesMode hidden_states = HiddenStatesMode::kNone;
    SglextFields sglext;  // the reply's sglext: its first choice's
  };

  ChatReply(ServerContext& ctx, std::string id, std::vector<std::unique_ptr<ChoiceStream>> choices,
            bool stream, Setup setup)
      : GenerationReply(ctx, std::move(id), std::move(choices), stream),
        setup_(std::move(setup)),
        started_(choices_.size(), false),
        held_reasoning_(choices_.size()) {}

 private:
  json head(const char* object) const {
    return json{{"id", id_}, {"object", object}, {"created", created_}, {"model", setup_.model}};
  }

  // `unsent`: tokens already counted but not yet in a chunk (the role chunk precedes them).
  json usage(int64_t unsent = 0) const {
    int64_t completion = -unsent;
    for (const auto& c : choices_) completion += c->completion_tokens();
    json u = {{"prompt_tokens", setup_.prompt_tokens},
              {"completion_tokens", completion},
              {"total_tokens", setup_.prompt_tokens + completion}};
    // One prompt: its first choice's cached tokens (SGLang's).
    if (ctx_.info.api.enable_cache_report)
      request_json::add_cache_report(u, choices_.front()->cached_tokens());
    return u;
  }

  json logprobs(const ChoiceDelta& d) const {
    return json{{"content", request_json::token_logprobs(d)}};
  }

  void add_finish(json& c, size_t index) const {
    c["finish_reason"] = nullptr;
    if (!choices_[index]->finished()) return;
    const FinishInfo& f = choices_[index]->finish();
    c["finish_reason"] = f.reason;
    c["matched_stop"] = f.matched_string  ? json(*f.matched_string)
                        : f.matched_token ? json(*f.matched_token)
                                          : json(nullptr);
  }

  std::string chunk(json choice, int64_t unsent = 0) const {
    json out = head("chat.completion.chunk");
    out["choices"] = json::array({std::move(choice)});
    if (setup_.include_usage || setup_.continuous_usage) {
      out["usage"] = setup_.continuous_usage ? usage(unsent) : json(nullptr);
    }
    return sse_data(request_json::dump(out));
  }

  std::string stream_delta(size_t index, const ChoiceDelta& d) override {
    std::string out;
    if (!started_[index]) {
      started_[index] = true;
      out += chunk({{"index", index},
                    {"delta", {{"role", "assistant"}, {"content", ""}}},
                    {"logprobs", nullptr},
                    {"finish_reason", nullptr}},
                   static_cast<int64_t>(d.token_ids.size()));
    }
    std::string reasoning = d.reasoning;
    if (!setup_.stream_reasoning) {
      std::string& held = held_reasoning_[index];
      held += reasoning;
      const bool reasoning_over = !d.text.empty() || !d.tool_calls.empty() || d.finished;
      reasoning = reasoning_over ? std::exchange(held, {}) : std::string();
    }
    if (!reasoning.empty()) {
      out += chunk({{"index", index},
                    {"delta", {{"reasoning_content", reasoning}}},
                    {"logprobs", nullptr},
                    {"finish_reason", nullptr}});
    }
    if (!d.text.empty() || (setup_.logprobs && !d.token_ids.empty())) {
      out += chunk({{"index", index},
                    {"delta", {{"content", d.text}}},
                    {"logprobs", setup_.logprobs ? logprobs(d) : json(nullptr)},
                    {"finish_reason", nullptr}});
    }
    for (const ToolCallDelta& call : d.tool_calls) {
      // OpenAI's order: the call's id, type and name with empty arguments, then the arguments.
      if (!call.id.empty()) {
        out += tool_call_chunk(index, {{"index", call.index},
                                       {"id", call.id},
                                       {"type", "function"},
                                       {"function", {{"name", call.name}, {"arguments", ""}}}});
      }
      if (!call.arguments.empty()) {
        out += tool_call_chunk(
            index, {{"index", call.index}, {"function", {{"arguments", call.arguments}}}});
      }
    }
    if (d.finished) {
      json c = {{"index", index}, {"delta", json::object()}, {"logprobs", nullptr}};
      add_finish(c, index);
      out += chunk(std::move(c));
    }
    return out;
  }

  std::string tool_call_chunk(size_t index, json call) const {
    return chunk({{"index", index},
                  {"delta", {{"tool_calls", json::array({std::move(call)})}}},
                  {"logprobs", nullptr},
                  {"finish_reason", nullptr}});
  }

  json message(const ChoiceDelta& total) const {
    json calls = nullptr;
    if (!total.tool_calls.empty()) {
      calls = json::array();
      for (const ToolCallDelta& call : total.tool_calls) {
        calls.push_back({{"id", call.id},
                         {"type", "function"},
                         {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
      }
    }
    // OpenAI: content is null in a reply that only calls tools.
    json m = {
        {"role", "assistant"},
        {"content", total.text.empty() && !calls.is_null() ? json(nullptr) : json(total.text)}};
    if (setup_.reasoning) {
      m["reasoning_content"] = total.reasoning.empty() ? json(nullptr) : json(total.reasoning);
    }
    m["tool_calls"] = std::move(calls);
    return m;
  }

  std::string stream_end() override {
    std::string out;
    // SGLang's: each choice's hidden states in a chunk of their own, after its text.
    for (size_t i = 0; i < choices_.size() && setup_.hidden_states != HiddenStatesMode::kNone;
         ++i) {
      out += chunk({{"index", i},
                    {"delta", {{"hidden_states", hidden_states(i)}}},
                    {"logprobs", nullptr},
                    {"finish_reason", nullptr}});
    }
    if (json ext = sglext(); !ext.is_null()) {
      json chunk = head("chat.completion.chunk");
      chunk["choices"] = json::array();
      chunk["sglext"] = std::move(ext);
      out += sse_data(request_json::dump(chunk));
    }
    if (setup_.include_usage) {
      json last = head("chat.completion.chunk");
      last["choices"] = json::array();
      last["usage"] = usage();
      out += sse_data(request_json::dump(last));
    }
    return out + sse_done();
  }

  HttpResponse complete() override {
    json body = head("chat.completion");
    body["choices"] = json::array();
    for (size_t i = 0; i < choices_.size(); ++i) {
      const ChoiceDelta& total = choices_[i]->total();
      json c = {{"index", i},
                {"message", message(total)},
                {"logprobs", setup_.logprobs ? logprobs(total) : json(nullptr)}};
      add_finish(c, i);
      if (setup_.hidden_states != HiddenStatesMode::kNone) c["hidden_states"] = hidden_states(i);
      if (setup_.prompt_token_ids) c["prompt_token_ids"] = *setup_.prompt_token_ids;
      if (setup_.response_token_ids) c["response_token_ids"] = total.token_ids;
      body["choices"].push_back(std::move(c));
    }
    body["usage"] = usage();
    if (json ext = sglext(); !ext.is_null()) body["sglext"] = std::move(ext);
    return request_json::json_response(body);
  }

  json sglext() const { return sglext_json(choices_, ctx_.info, setup_.sglext); }

  json hidden_states(size_t index) const {
    return choice_hidden_states(*choices_[index], ctx_.info.hidden_size, setup_.hidden_states);
  }

  Setup setup_;
  std::vector<bool> started_;
  std::vector<std::string> held_reasoning_;  // per choice, without stream_reasoning
};

// On a pool thread: renders, tokenizes and submits the choices.
Reply prepare_chat(ServerContext& ctx, const ChatRequest& req, const std::atomic<bool>& cancelled) {
  auto claim = ctx.registry.claim(client_request_ids(req.routing));
  if (!claim.ok()) return Reply::of(error_response(claim.status()));
  auto submitted = submit_chat(ctx, req, cancelled);
  if (!submitted.ok()) return Reply::of(error_response(submitted.status()));
  ChatReply::Setup setup;
  // SGLang serves whatever model name a request gives, and answers with it.
  setup.model = req.model.value_or(ctx.info.served_model_name);
  setup.logprobs = req.logprobs;
  setup.include_usage = req.include_usage;
  setup.continuous_usage = req.continuous_usage;
  setup.prompt_tokens = submitted->prompt_tokens;
  // reasoning_content is listed (null when empty) whenever the server separates reasoning.
  setup.reasoning = !ctx.info.reasoning_parser.empty();
  setup.stream_reasoning = req.stream_reasoning;
  if (req.return_prompt_token_ids || req.return_token_ids) {
    setup.prompt_token_ids = std::move(submitted->prompt_ids);
  }
  setup.response_token_ids = req.return_token_ids;
  setup.hidden_states = req.return_hidden_states;
  setup.sglext = req.sglext;
  return Reply::later(
      std::make_unique<ChatReply>(ctx, reply_id(req.routing.rid, "chatcmpl-"),
                                  std::move(submitted->choices), req.stream, std::move(setup)),
      req.stream);
}

}  // namespace

Reply handle_chat_completions(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = parse_chat_request(request.body, ctx.sampling_defaults);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  ChatRequest& req = *parsed;
  use_model_lora(ctx.info, req.model, req.routing);
  req.include_usage = req.include_usage || ctx.info.api.stream_default_include_usage;
  if (Status s = check_chat_template(ctx); !s.ok()) return Reply::of(error_response(s));
  if (Status s = check_hidden_states(ctx.info, req.return_hidden_states); !s.ok()) {
    return Reply::of(error_response(s));
  }
  if (Status s = check_thinking_switch(ctx, req, "'reasoning_effort'"); !s.ok()) {
    return Reply::of(error_response(s));
  }
  const bool stream = req.stream;
  auto shared = std::make_shared<const ChatRequest>(std::move(req));
  return PreparedReply::submit(ctx, stream, [&ctx, shared](const std::atomic<bool>& cancelled) {
    return prepare_chat(ctx, *shared, cancelled);
  });
}

}  // namespace sgl::server
