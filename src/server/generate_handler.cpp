// POST /generate (SGLang native): text or input_ids (one or a batch) x n, sampling_params,
// logprobs as [logprob, id, text] triples, streaming of cumulative outputs.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <utility>
#include <vector>

#include "server/engine_request.h"
#include "server/errors.h"
#include "server/generation_reply.h"
#include "server/handlers.h"
#include "server/hidden_states_json.h"
#include "server/openai_json.h"
#include "server/prepared_reply.h"
#include "server/prompt_token_logprobs.h"
#include "server/reasoning_gate.h"
#include "server/request_json.h"
#include "server/routed_experts_json.h"
#include "server/sampling_json.h"
#include "server/sglext_json.h"
#include "server/sse.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class GenerateReply final : public GenerationReply {
 public:
  struct Setup {
    bool list = false;  // answer a list (a batch, or n > 1)
    // With `list`, each item's id (SGLang's: the batch's rids, else the request's id + "_" + i),
    // which /abort_request also takes.
    std::vector<std::string> item_ids;
    bool logprobs = false;
    bool top_logprobs = false;  // with logprobs, top_logprobs_num > 0: the top-k listings
    bool text_in_logprobs = false;
    // With logprobs or prompt_token_ids, per choice: its prompt ids; with logprobs, where
    // input_token_logprobs start (SGLang: logprob_start_len, or the last prompt token by
    // default).
    std::vector<std::vector<int32_t>> prompt_ids;
    std::vector<int32_t> logprob_starts;
    // token_ids_logprob was given: meta_info lists input_ and output_token_ids_logprobs, one
    // [logprob, id, text] per requested id at each position (SGLang), with per choice the ids.
    bool token_ids = false;
    std::vector<std::vector<int32_t>> token_ids_logprob;
    // return_hidden_states: meta_info.hidden_states (SGLang's layout, hidden_states_json.h).
    HiddenStatesMode hidden_states = HiddenStatesMode::kNone;
    // return_routed_experts: meta_info.routed_experts, once the choice finished.
    RoutedExpertsInput routed_experts;
    bool prompt_token_ids = false;  // return_prompt_token_ids: each item lists its prompt_ids
    // A turn of this session (the request's id is its rid there): its output is recorded as it
    // comes (a `replace` of the running turn continues from it) and when it ends, for the turns
    // that continue it.
    std::optional<std::string> session_id;
  };

  GenerateReply(ServerContext& ctx, std::string id,
                std::vector<std::unique_ptr<ChoiceStream>> choices, bool stream, Setup setup)
      : GenerationReply(ctx, std::move(id), std::move(choices), stream, setup.item_ids),
        setup_(std::move(setup)),
        start_s_(now_s()),
        input_cache_(choices_.size()),
        input_final_(choices_.size(), false) {}
  ~GenerateReply() override { record_session_turn(); }

 private:
  // Once: the session turn's output (what it has, if it ended early or its client went away).
  void record_session_turn() {
    if (!setup_.session_id || std::exchange(session_recorded_, true)) return;
    ctx_.sessions.finish(*setup_.session_id, id_, choices_.front()->total().token_ids);
  }

  void pulled(size_t /*index*/, const ChoiceDelta& delta) override {
    if (setup_.session_id) ctx_.sessions.append_output(*setup_.session_id, id_, delta.token_ids);
  }

  json triple(float logprob, int32_t id, const std::string* text) const {
    return json::array(
        {logprob, id, setup_.text_in_logprobs && text ? json(*text) : json(nullptr)});
  }

  json finish_reason(size_t i) const {
    if (!choices_[i]->finished()) return nullptr;
    const FinishInfo& f = choices_[i]->finish();
    json r = {{"type", f.reason}};
    if (f.reason == "length") r["length"] = choices_[i]->completion_tokens();
    if (f.matched_string) r["matched"] = *f.matched_string;
    if (f.matched_token) r["matched"] = *f.matched_token;
    if (f.reason == "abort") r["message"] = f.message;
    if (f.error()) r["status_code"] = f.status;
    return r;
  }

  struct InputLogprobs {
    json tokens = json::array();     // input_token_logprobs: [logprob | null, id, text | null]
    json tops = json::array();       // input_top_logprobs: null or a list of triples, per token
    json token_ids = json::array();  // input_token_ids_logprobs: the same, when asked
  };

  // One position's requested-id logprobs as triples (null when there are none, as SGLang).
  json token_ids_triples(const std::vector<int32_t>& asked, const std::vector<float>* values,
                         const std::vector<std::string>* texts) const {
    if (!values || values->empty()) return nullptr;
    json list = json::array();
    for (size_t a = 0; a < values->size() && a < asked.size(); ++a) {
      list.push_back(
          triple((*values)[a], asked[a], texts && a < texts->size() ? &(*texts)[a] : nullptr));
    }
    return list;
  }

  // Choice i's prompt-token listings, rebuilt until its prompt logprobs arrived or it finished
  // (streams repeat them in every item).
  const InputLogprobs& input_logprobs(size_t i) {
    const auto& scores = choices_[i]->total().prompt_logprobs;
    if (input_cache_[i] && input_final_[i]) return *input_cache_[i];
    InputLogprobs out;
    const std::vector<int32_t> no_ids;
    const std::vector<int32_t>& asked = setup_.token_ids ? setup_.token_ids_logprob[i] : no_ids;
    for (const PromptTokenEntry& e :
         prompt_token_entries(ctx_.tokenizer, setup_.prompt_ids[i], setup_.logprob_starts[i],
                              scores ? &*scores : nullptr, setup_.text_in_logprobs, asked)) {
      const json text = setup_.text_in_logprobs ? json(e.text) : json(nullptr);
      out.tokens.push_back(json::array({e.logprob ? json(*e.logprob) : json(nullptr), e.id, text}));
      json top = e.top ? json::array() : json(nullptr);
      for (size_t a = 0; e.top && a < e.top->size(); ++a) {
        top.push_back(triple((*e.top)[a].logprob, (*e.top)[a].id,
                             setup_.text_in_logprobs ? &e.top_texts[a] : nullptr));
      }
      out.tops.push_back(std::move(top));
      if (setup_.token_ids) {
        out.token_ids.push_back(token_ids_triples(
            asked, e.token_ids_logprobs ? &*e.token_ids_logprobs : nullptr, &e.token_ids_texts));
      }
    }
    input_cache_[i] = std::move(out);
    input_final_[i] = scores.has_value() || choices_[i]->finished();
    return *input_cache_[i];
  }

  // The item for choice i: everything so far (SGLang streams cumulative outputs), or with
  // --incremental-streaming-output a stream's `delta` alone (text, output_ids, output logprobs).
  json item(size_t i, const ChoiceDelta* delta = nullptr) {
    const ChoiceStream& c = *choices_[i];
    const ChoiceDelta& t = delta != nullptr ? *delta : c.total();
    // SGLang's meta_info keys, in its order.
    json meta = {{"id", setup_.list ? setup_.item_ids[i] : id_},
                 {"finish_reason", finish_reason(i)},
                 {"prompt_tokens", c.prompt_tokens()},
                 {"weight_version", ctx_.weights.version()},
                 {"num_retractions", c.retractions()}};
    if (setup_.logprobs) {
      json tokens = json::array(), tops = json::array();
      for (size_t k = 0; k < t.token_ids.size(); ++k) {
        const std::string* text = k < t.token_texts.size() ? &t.token_texts[k] : nullptr;
        tokens.push_back(triple(k < t.logprobs.size() ? t.logprobs[k] : 0.f, t.token_ids[k], text));
        json top = json::array();
        if (k < t.top_logprobs.size()) {
          for (size_t a = 0; a < t.top_logprobs[k].size(); ++a) {
            const bool has_text = k < t.top_token_texts.size();
            top.push_back(triple(t.top_logprobs[k][a].logprob, t.top_logprobs[k][a].id,
                                 has_text ? &t.top_token_texts[k][a] : nullptr));
          }
        }
        tops.push_back(std::move(top));
      }
      const InputLogprobs& input = input_logprobs(i);
      meta["input_token_logprobs"] = input.tokens;
      meta["output_token_logprobs"] = std::move(tokens);
      meta["output_token_logprobs_length"] = t.token_ids.size();
      if (setup_.top_logprobs) {
        meta["input_top_logprobs"] = input.tops;
        meta["output_top_logprobs"] = std::move(tops);
      }
      if (setup_.token_ids) {
        json ids = json::array();
        for (size_t k = 0; k < t.token_ids.size(); ++k) {
          ids.push_back(token_ids_triples(
              setup_.token_ids_logprob[i],
              k < t.token_ids_logprobs.size() ? &t.token_ids_logprobs[k] : nullptr,
              k < t.token_ids_texts.size() ? &t.token_ids_texts[k] : nullptr));
        }
        meta["input_token_ids_logprobs"] = input.token_ids;
        meta["output_token_ids_logprobs"] = std::move(ids);
      }
    }
    if (setup_.hidden_states != HiddenStatesMode::kNone) {
      // A delta's rows are the total's last (the total holds every delta pulled); the total's
      // start at position 0. "last" always names the latest row.
      const bool latest = setup_.hidden_states == HiddenStatesMode::kLast;
      const std::span<const float> rows = latest ? c.total().hidden_states : t.hidden_states;
      const auto first = static_cast<int64_t>(c.total().hidden_states.size() - rows.size()) /
                         ctx_.info.hidden_size;
      meta["hidden_states"] =
          meta_info_hidden_states(c, rows, first, ctx_.info.hidden_size, setup_.hidden_states);
    }
    if (setup_.routed_experts.asked && c.finished()) {
      meta["routed_experts"] =
          choice_routed_experts(c, ctx_.info.routed_experts, setup_.routed_experts.start_len);
    }
    if (json spec = spec_meta_fields(c); !spec.is_null()) meta.update(spec);
    meta["reasoning_tokens"] = c.reasoning_tokens();
    meta["completion_tokens"] = c.completion_tokens();
    meta["cached_tokens"] = c.cached_tokens();
    meta["e2e_latency"] = now_s() - start_s_;
    // Without a tokenizer, SGLang's items carry no text.
    json out = ctx_.info.skip_tokenizer_init ? json::object() : json{{"text", t.text}};
    out["output_ids"] = t.token_ids;
    out["meta_info"] = std::move(meta);
    if (setup_.prompt_token_ids) out["prompt_token_ids"] = setup_.prompt_ids[i];
    if (setup_.list) out["index"] = i;
    return out;
  }

  std::string stream_delta(size_t index, const ChoiceDelta& d) override {
    if (d.token_ids.empty() && d.text.empty() && !d.finished) return "";
    const bool incremental = ctx_.info.api.incremental_streaming_output;
    return sse_data(request_json::dump(item(index, incremental ? &d : nullptr)));
  }

  std::string stream_end() override {
    record_session_turn();
    return sse_done();
  }
  // SGLang's /generate streams the failed item as any other, its finish_reason saying why.
  std::string stream_error(size_t index, const ChoiceDelta& d) override {
    return stream_delta(index, d);
  }
  HttpResponse error_reply(const FinishInfo& finish) override {
    record_session_turn();
    return GenerationReply::error_reply(finish);
  }

  HttpResponse complete() override {
    record_session_turn();
    HttpResponse r;
    if (setup_.list) {
      json items = json::array();
      for (size_t i = 0; i < choices_.size(); ++i) items.push_back(item(i));
      r.body = request_json::dump(items);
    } else {
      r.body = request_json::dump(item(0));
    }
    return r;
  }

  Setup setup_;
  double start_s_;
  std::vector<std::optional<InputLogprobs>> input_cache_;  // per choice
  std::vector<bool> input_final_;
  bool session_recorded_ = false;
};

// A session turn begun (its node made) but not yet handed to its reply: the node goes if the
// request never runs.
class PendingSessionTurn {
 public:
  PendingSessionTurn(SessionStore& store, std::string session, std::string rid)
      : store_(&store), session_(std::move(session)), rid_(std::move(rid)) {}
  PendingSessionTurn(const PendingSessionTurn&) = delete;
  PendingSessionTurn& operator=(const PendingSessionTurn&) = delete;
  ~PendingSessionTurn() {
    if (store_ != nullptr) store_->abandon(session_, rid_);
  }
  void handed_over() { store_ = nullptr; }

 private:
  SessionStore* store_;
  std::string session_, rid_;
};

// On a pool thread: tokenizes the prompts and submits the choices.
Reply prepare_generate(ServerContext& ctx, const GenerateInput& req) {
  GenerateReply::Setup setup;
  setup.list = req.batch || req.sampling.n > 1;
  const std::string id = reply_id(req.routing.rid, "");
  // A list of rids names each prompt's items (a prompt's n samples: rid_0, rid_1, ...).
  for (const std::string& rid : req.routing.rids) {
    for (int64_t j = 0; j < req.sampling.n; ++j) {
      setup.item_ids.push_back(req.sampling.n == 1 ? rid : rid + "_" + std::to_string(j));
    }
  }
  if (setup.list && req.routing.rids.empty()) {
    const int64_t items = static_cast<int64_t>(req.prompts.size()) * req.sampling.n;
    for (int64_t i = 0; i < items; ++i) setup.item_ids.push_back(id + "_" + std::to_string(i));
  }
  // top_logprobs_num and token_ids_logprob refine return_logprob, as SGLang's (without it they
  // return nothing).
  setup.logprobs = req.return_logprob;
  setup.top_logprobs = setup.logprobs && req.top_logprobs_num > 0;
  setup.text_in_logprobs = req.return_text_in_logprobs;
  setup.token_ids = setup.logprobs && req.token_ids_logprob.has_value();
  setup.hidden_states = req.return_hidden_states;
  setup.routed_experts = req.routed_experts;
  setup.prompt_token_ids = req.return_prompt_token_ids;
  grammar::ReasoningGate gate;
  if (req.require_reasoning) {
    auto required = required_reasoning_gate(ctx);
    if (!required.ok()) {
      return Reply::of(error_response(400, required.status().message(), "require_reasoning"));
    }
    gate = std::move(required).value();
  }
  std::vector<ChoicePlan> plans;
  std::optional<PendingSessionTurn> session_turn;
  for (size_t p = 0; p < req.prompts.size(); ++p) {
    std::vector<int32_t> ids = prompt_ids(ctx, req.prompts[p]);
    if (req.session) {  // one prompt, n 1 (checked when parsed)
      auto turn =
          ctx.sessions.begin(*req.session, id, std::move(ids), ctx.tokenizer.bos_token_id());
      if (!turn.ok()) return Reply::of(error_response(turn.status()));
      session_turn.emplace(ctx.sessions, req.session->id, id);
      // replace dropped these turns, or continues this running one: they end as SGLang's do.
      for (const std::string& dropped : turn->to_abort) {
        for (uint64_t rid : ctx.registry.find(dropped)) ctx.engine.abort(rid);
      }
      ids = std::move(turn->input_ids);
      setup.session_id = req.session->id;
    }
    if (Status s =
            check_routed_experts(ctx.info, req.routed_experts, static_cast<int64_t>(ids.size()));
        !s.ok()) {
      return Reply::of(error_response(s));
    }
    grammar::ReasoningGate budget_gate;
    if (req.max_thinking_tokens) {
      auto made = generate_budget_gate(ctx, ids, req.require_reasoning, *req.max_thinking_tokens);
      if (!made.ok()) {
        return Reply::of(error_response(400, made.status().message(), "max_thinking_tokens"));
      }
      budget_gate = std::move(made).value();
    }
    // One list for every prompt, or one each (checked when parsed).
    const std::vector<int32_t> asked =
        setup.token_ids ? (*req.token_ids_logprob)[req.token_ids_logprob->size() == 1 ? 0 : p]
                        : std::vector<int32_t>{};
    const SamplingInput& sampling = req.sampling_of(p);
    for (int64_t j = 0; j < sampling.n; ++j) {
      auto built =
          build_engine_request(ctx, sampling, ids, j, sampling_json::kGenerateDefaultMaxNewTokens);
      if (!built.ok()) return Reply::of(error_response(built.status()));
      ChoicePlan plan{std::move(built).value(),
                      choice_options(sampling, setup.logprobs && setup.text_in_logprobs)};
      plan.request.return_logprob = setup.logprobs;
      plan.request.top_logprobs_num =
          setup.logprobs ? static_cast<int32_t>(req.top_logprobs_num) : 0;
      plan.request.token_ids_logprob = asked;
      plan.request.return_hidden_states = req.return_hidden_states != HiddenStatesMode::kNone;
      plan.request.return_routed_experts = req.routed_experts.asked;
      if (Status s = apply_routing(ctx, req.routing, p, plan.request); !s.ok()) {
        return Reply::of(error_response(s));
      }
      if (setup.text_in_logprobs) plan.options.token_ids_logprob = asked;
      plan.options.no_logs = req.no_logs;
      if (plan.request.grammar) plan.request.reasoning_gate = gate;
      if (budget_gate.has_budget()) {
        if (plan.request.grammar && !req.require_reasoning) {
          return Reply::of(error_response(
              400,
              "max_thinking_tokens with a grammar needs require_reasoning: without it the "
              "grammar holds from the first token, and there is no reasoning to budget",
              "max_thinking_tokens"));
        }
        plan.request.reasoning_gate = budget_gate;
      }
      if (setup.logprobs) {
        // SGLang: input_token_logprobs from logprob_start_len; by default (-1) and at the prompt
        // length, none.
        const auto len = static_cast<int64_t>(ids.size());
        if (req.logprob_start_len > len) {
          return Reply::of(error_response(
              400,
              "logprob_start_len (" + std::to_string(req.logprob_start_len) +
                  ") must be at most the prompt length (" + std::to_string(len) + ")",
              "logprob_start_len"));
        }
        const int64_t start = req.logprob_start_len >= 0 ? req.logprob_start_len : len;
        plan.request.logprob_start_len = start < len ? static_cast<int32_t>(start) : -1;
        if (setup.token_ids) setup.token_ids_logprob.push_back(asked);
        setup.logprob_starts.push_back(static_cast<int32_t>(start));
      }
      if (setup.logprobs || setup.prompt_token_ids) setup.prompt_ids.push_back(ids);
      plans.push_back(std::move(plan));
    }
  }
  // The client's ids: its rid (and the items named after it) or its list of rids.
  std::vector<std::string> client_ids = client_request_ids(req.routing);
  if (!client_ids.empty() || !req.routing.rids.empty()) {
    client_ids.insert(client_ids.end(), setup.item_ids.begin(), setup.item_ids.end());
  }
  auto claim = ctx.registry.claim(std::move(client_ids));
  if (!claim.ok()) return Reply::of(error_response(claim.status()));
  auto choices = submit_choices(ctx, std::move(plans), req.routing.routed_dp_rank);
  if (!choices.ok()) return Reply::of(error_response(choices.status()));
  auto reply =
      std::make_unique<GenerateReply>(ctx, id, std::move(choices).value(), req.stream, setup);
  if (session_turn) session_turn->handed_over();
  return Reply::later(std::move(reply), req.stream);
}

// The fields that match or make text, which a server without a tokenizer
// (--skip-tokenizer-init) cannot honour: an error naming the first one given. (Grammars are
// refused where every route compiles them, GrammarBackend.)
Status check_without_tokenizer(const GenerateInput& req) {
  const auto refuse = [](const std::string& field) {
    return invalid_argument("'" + field +
                            "' needs the tokenizer, which this server does not load "
                            "(--skip-tokenizer-init): stop on token ids (stop_token_ids) and "
                            "read output_ids");
  };
  if (req.return_text_in_logprobs) return refuse("return_text_in_logprobs");
  if (req.require_reasoning) return refuse("require_reasoning");
  if (req.max_thinking_tokens) return refuse("max_thinking_tokens");
  const std::vector<SamplingInput> one = {req.sampling};
  for (const SamplingInput& s : req.per_prompt_sampling.empty() ? one : req.per_prompt_sampling) {
    if (!s.stop.empty()) return refuse("stop");
    if (!s.stop_regex.empty()) return refuse("stop_regex");
  }
  return Status::ok_status();
}

}  // namespace

Reply handle_generate(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = parse_generate_request(request.body, ctx.sampling_defaults);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  GenerateInput& req = *parsed;
  if (Status s = check_prompts(ctx, req.prompts, "text"); !s.ok()) {
    return Reply::of(error_response(s));
  }
  if (ctx.info.skip_tokenizer_init) {
    if (Status s = check_without_tokenizer(req); !s.ok()) return Reply::of(error_response(s));
  }
  if (Status s = check_hidden_states(ctx.info, req.return_hidden_states); !s.ok()) {
    return Reply::of(error_response(s));
  }
  const bool stream = req.stream;
  auto shared = std::make_shared<const GenerateInput>(std::move(req));
  return PreparedReply::submit(ctx, stream, [&ctx, shared](const std::atomic<bool>&) {
    return prepare_generate(ctx, *shared);
  });
}

}  // namespace sgl::server
