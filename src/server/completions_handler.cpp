// POST /v1/completions: prompts (text or ids, one or many) x n choices, echo, logprobs,
// streaming.
#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/utf8.h"
#include "server/engine_request.h"
#include "server/errors.h"
#include "server/generation_reply.h"
#include "server/handlers.h"
#include "server/hidden_states_json.h"
#include "server/lora_request.h"
#include "server/openai_json.h"
#include "server/prepared_reply.h"
#include "server/prompt_token_logprobs.h"
#include "server/request_json.h"
#include "server/routed_experts_json.h"
#include "server/sglext_json.h"
#include "server/sse.h"
#include "server/text_offsets.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;

json matched_stop(const FinishInfo& f) {
  if (f.matched_string) return *f.matched_string;
  if (f.matched_token) return *f.matched_token;
  return nullptr;
}

class CompletionReply final : public GenerationReply {
 public:
  struct Setup {
    std::string model;
    std::vector<std::string> echo;  // per choice: the prompt text to prepend (echo), else ""
    std::optional<int64_t> logprobs;
    // echo with logprobs: the prompt tokens are listed first.
    bool echo_logprobs = false;
    std::vector<std::vector<int32_t>> prompt_ids;  // per choice, with logprobs or token_ids
    tokenizer::DecodeOptions decode;               // how the choice's text is decoded
    bool include_usage = false;
    bool continuous_usage = false;  // the usage so far in every chunk
    int64_t prompt_tokens = 0;      // over the prompts, each counted once
    int64_t n = 1;                  // choices per prompt
    bool token_ids = false;         // return_token_ids: token_ids and prompt_token_ids
    HiddenStatesMode hidden_states = HiddenStatesMode::kNone;
    SglextFields sglext;  // the reply's sglext: its first choice's
  };

  CompletionReply(ServerContext& ctx, std::string id,
                  std::vector<std::unique_ptr<ChoiceStream>> choices, bool stream, Setup setup)
      : GenerationReply(ctx, std::move(id), std::move(choices), stream),
        setup_(std::move(setup)),
        offsets_(choices_.size()),
        started_(choices_.size(), false) {}

 private:
  json head() const {
    return json{
        {"id", id_}, {"object", "text_completion"}, {"created", created_}, {"model", setup_.model}};
  }

  json usage() const {
    int64_t completion = 0;
    for (const auto& c : choices_) completion += c->completion_tokens();
    json u = {{"prompt_tokens", setup_.prompt_tokens},
              {"completion_tokens", completion},
              {"total_tokens", setup_.prompt_tokens + completion}};
    if (ctx_.info.api.enable_cache_report) {
      // Each prompt once: the first of its n choices (SGLang's).
      int64_t cached = 0;
      for (size_t i = 0; i < choices_.size(); i += static_cast<size_t>(setup_.n)) {
        cached += choices_[i]->cached_tokens();
      }
      request_json::add_cache_report(u, cached);
    }
    return u;
  }

  // OpenAI's legacy logprobs object for `d`'s tokens, after the prompt's tokens when
  // `with_prompt` (echo); advances the choice's text offsets.
  json logprobs(size_t index, const ChoiceDelta& d, bool with_prompt) {
    json tokens = json::array(), token_logprobs = json::array(), offsets = json::array();
    json top = setup_.logprobs.value_or(0) > 0 ? json::array() : json(nullptr);
    const size_t echo_length = utf8_length(setup_.echo[index]);
    if (with_prompt) {
      const auto& scores = choices_[index]->total().prompt_logprobs;
      TextOffsets prompt_offsets(ctx_.tokenizer, {}, setup_.decode, 0, echo_length);
      for (const PromptTokenEntry& e : prompt_token_entries(
               ctx_.tokenizer, setup_.prompt_ids[index], 0, scores ? &*scores : nullptr, true)) {
        tokens.push_back(e.text);
        token_logprobs.push_back(e.logprob ? json(*e.logprob) : json(nullptr));
        offsets.push_back(prompt_offsets.next(e.id));
        if (top.is_null()) continue;
        if (!e.top) {
          top.push_back(nullptr);
          continue;
        }
        json alternatives = json::object();
        for (size_t k = 0; k < e.top->size(); ++k) {
          if (!alternatives.contains(e.top_texts[k])) {
            alternatives[e.top_texts[k]] = (*e.top)[k].logprob;
          }
        }
        top.push_back(std::move(alternatives));
      }
    }
    if (!offsets_[index]) {
      // The generated text follows the echoed prompt, decoded after the prompt's ids.
      offsets_[index].emplace(ctx_.tokenizer, setup_.prompt_ids[index], setup_.decode, echo_length);
    }
    for (size_t i = 0; i < d.token_ids.size(); ++i) {
      const std::string& text = i < d.token_texts.size() ? d.token_texts[i] : std::string();
      tokens.push_back(text);
      token_logprobs.push_back(i < d.logprobs.size() ? json(d.logprobs[i]) : json(nullptr));
      offsets.push_back(offsets_[index]->next(d.token_ids[i]));
      if (!top.is_null()) {
        json alternatives = json::object();
        if (i < d.top_logprobs.size()) {
          for (size_t k = 0; k < d.top_logprobs[i].size(); ++k) {
            const std::string& alt = d.top_token_texts[i][k];
            if (!alternatives.contains(alt)) alternatives[alt] = d.top_logprobs[i][k].logprob;
          }
        }
        top.push_back(std::move(alternatives));
      }
    }
    return json{{"tokens", std::move(tokens)},
                {"token_logprobs", std::move(token_logprobs)},
                {"top_logprobs", std::move(top)},
                {"text_offset", std::move(offsets)}};
  }

  // `whole`: the complete reply's choice (its hidden states included).
  json choice(size_t index, std::string text, const ChoiceDelta& d, bool first,
              bool whole = false) {
    json c = {{"index", index},
              {"text", std::move(text)},
              {"logprobs", nullptr},
              {"finish_reason", nullptr}};
    if (setup_.logprobs) c["logprobs"] = logprobs(index, d, first && setup_.echo_logprobs);
    if (choices_[index]->finished()) {
      const FinishInfo& f = choices_[index]->finish();
      c["finish_reason"] = f.reason;
      c["matched_stop"] = matched_stop(f);
    }
    if (whole && setup_.hidden_states != HiddenStatesMode::kNone) {
      c["hidden_states"] =
          choice_hidden_states(*choices_[index], ctx_.info.hidden_size, setup_.hidden_states);
    }
    if (setup_.token_ids) {
      c["token_ids"] = d.token_ids;
      if (first) c["prompt_token_ids"] = setup_.prompt_ids[index];
    }
    return c;
  }

  std::string stream_delta(size_t index, const ChoiceDelta& d) override {
    const bool first = !started_[index];
    const bool lists_tokens = setup_.logprobs || setup_.token_ids;
    if (d.text.empty() && !d.finished && !first && (!lists_tokens || d.token_ids.empty())) {
      return "";
    }
    started_[index] = true;
    json chunk = head();
    chunk["choices"] =
        json::array({choice(index, (first ? setup_.echo[index] : "") + d.text, d, first)});
    if (setup_.include_usage || setup_.continuous_usage) {
      chunk["usage"] = setup_.continuous_usage ? usage() : json(nullptr);
    }
    return sse_data(request_json::dump(chunk));
  }

  std::string stream_end() override {
    std::string out;
    // SGLang's: each choice's hidden states in a chunk of their own, after its text.
    for (size_t i = 0; i < choices_.size() && setup_.hidden_states != HiddenStatesMode::kNone;
         ++i) {
      json chunk = head();
      chunk["choices"] =
          json::array({{{"index", i},
                        {"text", ""},
                        {"logprobs", nullptr},
                        {"finish_reason", nullptr},
                        {"hidden_states", choice_hidden_states(*choices_[i], ctx_.info.hidden_size,
                                                               setup_.hidden_states)}}});
      out += sse_data(request_json::dump(chunk));
    }
    if (json ext = sglext(); !ext.is_null()) {
      json chunk = head();
      chunk["choices"] = json::array();
      chunk["sglext"] = std::move(ext);
      out += sse_data(request_json::dump(chunk));
    }
    if (setup_.include_usage) {
      json chunk = head();
      chunk["choices"] = json::array();
      chunk["usage"] = usage();
      out += sse_data(request_json::dump(chunk));
    }
    return out + sse_done();
  }

  HttpResponse complete() override {
    json body = head();
    body["choices"] = json::array();
    for (size_t i = 0; i < choices_.size(); ++i) {
      const ChoiceDelta& total = choices_[i]->total();
      body["choices"].push_back(choice(i, setup_.echo[i] + total.text, total, true, true));
    }
    body["usage"] = usage();
    if (json ext = sglext(); !ext.is_null()) body["sglext"] = std::move(ext);
    return request_json::json_response(body);
  }

  json sglext() const { return sglext_json(choices_, ctx_.info, setup_.sglext); }

  Setup setup_;
  std::vector<std::optional<TextOffsets>> offsets_;  // per choice, from its first logprobs
  std::vector<bool> started_;
};

// On a pool thread: tokenizes the prompts and submits the choices.
Reply prepare_completions(ServerContext& ctx, const CompletionRequest& req) {
  CompletionReply::Setup setup;
  setup.n = req.sampling.n;
  // SGLang serves whatever model name a request gives, and answers with it.
  setup.model = req.model.value_or(ctx.info.served_model_name);
  setup.logprobs = req.logprobs;
  setup.echo_logprobs = req.echo && req.logprobs.has_value();
  setup.include_usage = req.include_usage;
  setup.continuous_usage = req.continuous_usage;
  setup.decode.skip_special_tokens = req.sampling.skip_special_tokens;
  setup.token_ids = req.return_token_ids;
  setup.hidden_states = req.return_hidden_states;
  setup.sglext = req.sglext;
  const std::optional<CompletionTemplate>& fim = ctx.info.api.completion_template;
  if (!req.suffix.empty() && !fim) {
    return Reply::of(error_response(400,
                                    "'suffix' needs the server's --completion-template (a code "
                                    "model's fill-in-the-middle markers)",
                                    "suffix"));
  }
  std::vector<ChoicePlan> plans;
  for (size_t p = 0; p < req.prompts.size(); ++p) {
    const PromptInput& given = req.prompts[p];
    // With a suffix (and no echo), the model fills the gap between the prompt and it.
    const PromptInput prompt =
        req.suffix.empty()
            ? given
            : PromptInput{true, fill_in_the_middle(*fim, given.text, req.suffix), {}};
    std::vector<int32_t> ids = prompt_ids(ctx, prompt);
    if (Status s = check_routed_experts(ctx.info, req.sglext.routed_experts,
                                        static_cast<int64_t>(ids.size()));
        !s.ok()) {
      return Reply::of(error_response(s));
    }
    setup.prompt_tokens += static_cast<int64_t>(ids.size());
    std::string echo;
    if (req.echo) echo = given.is_text ? given.text : ctx.tokenizer.decode(ids, setup.decode);
    for (int64_t j = 0; j < req.sampling.n; ++j) {
      auto built = build_engine_request(ctx, req.sampling, ids, j, std::nullopt);
      if (!built.ok()) return Reply::of(error_response(built.status()));
      ChoicePlan plan{std::move(built).value(),
                      choice_options(req.sampling, req.logprobs.has_value())};
      plan.request.return_logprob = req.logprobs.has_value();
      plan.request.top_logprobs_num = static_cast<int32_t>(req.logprobs.value_or(0));
      plan.request.return_hidden_states = req.return_hidden_states != HiddenStatesMode::kNone;
      plan.request.return_routed_experts = req.sglext.routed_experts.asked;
      if (Status s = apply_routing(ctx, req.routing, p, plan.request); !s.ok()) {
        return Reply::of(error_response(s));
      }
      if (setup.echo_logprobs) {
        plan.request.logprob_start_len = 0;  // every prompt token (the first has none)
      }
      if (req.logprobs || req.return_token_ids) setup.prompt_ids.push_back(ids);
      plans.push_back(std::move(plan));
      setup.echo.push_back(echo);
    }
  }
  auto claim = ctx.registry.claim(client_request_ids(req.routing));
  if (!claim.ok()) return Reply::of(error_response(claim.status()));
  auto choices = submit_choices(ctx, std::move(plans), req.routing.routed_dp_rank);
  if (!choices.ok()) return Reply::of(error_response(choices.status()));
  return Reply::later(
      std::make_unique<CompletionReply>(ctx, reply_id(req.routing.rid, "cmpl-"),
                                        std::move(choices).value(), req.stream, std::move(setup)),
      req.stream);
}

}  // namespace

Reply handle_completions(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = parse_completion_request(request.body, ctx.sampling_defaults);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  CompletionRequest& req = *parsed;
  use_model_lora(ctx.info, req.model, req.routing);
  req.include_usage = req.include_usage || ctx.info.api.stream_default_include_usage;
  if (Status s = check_prompts(ctx, req.prompts, "prompt"); !s.ok()) {
    return Reply::of(error_response(s));
  }
  if (Status s = check_hidden_states(ctx.info, req.return_hidden_states); !s.ok()) {
    return Reply::of(error_response(s));
  }
  const bool stream = req.stream;
  auto shared = std::make_shared<const CompletionRequest>(std::move(req));
  return PreparedReply::submit(ctx, stream, [&ctx, shared](const std::atomic<bool>&) {
    return prepare_completions(ctx, *shared);
  });
}

}  // namespace sgl::server
