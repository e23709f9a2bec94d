// POST /v1/score (SGLang's scoring API for causal LMs): each item's sequence is prefilled as one
// request that generates a single greedy token and reports its label tokens' log probabilities at
// the last position (the next token's distribution); the scores are their probabilities, or a
// softmax over them with `temperature`.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "server/engine_request.h"
#include "server/errors.h"
#include "server/generation_reply.h"
#include "server/handlers.h"
#include "server/prepared_reply.h"
#include "server/request_json.h"
#include "server/score_json.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;

// One item's scores from its labels' log probabilities (SGLang's conversion).
std::vector<double> scores_of(std::span<const float> logprobs, bool apply_softmax,
                              double temperature) {
  std::vector<double> scores(logprobs.begin(), logprobs.end());
  if (apply_softmax) {
    // Centred before scaling, so a small temperature does not overflow.
    const double top = *std::max_element(scores.begin(), scores.end());
    double sum = 0;
    for (double& s : scores) sum += s = std::exp((s - top) / temperature);
    for (double& s : scores) s /= sum;
  } else {
    for (double& s : scores) s = std::exp(s);
  }
  return scores;
}

// SGLang's ScoringResponse.
HttpResponse score_response(const ServerContext& ctx, const ScoreRequest& req, json scores,
                            json token_logprobs, int64_t prompt_tokens) {
  return request_json::json_response(
      {{"scores", std::move(scores)},
       {"pooled_hidden_states", nullptr},
       {"token_logprobs", req.return_token_logprobs ? std::move(token_logprobs) : json()},
       {"model", req.model.empty() ? ctx.info.served_model_name : req.model},
       {"usage",
        {{"prompt_tokens", prompt_tokens},
         {"total_tokens", prompt_tokens},
         {"completion_tokens", 0}}},
       {"object", "scoring"}});
}

class ScoreReply final : public GenerationReply {
 public:
  ScoreReply(ServerContext& ctx, std::vector<std::unique_ptr<ChoiceStream>> choices,
             ScoreRequest request, int64_t prompt_tokens)
      : GenerationReply(ctx, make_request_id("score-"), std::move(choices), /*stream=*/false),
        request_(std::move(request)),
        prompt_tokens_(prompt_tokens) {}

 private:
  std::string stream_delta(size_t, const ChoiceDelta&) override { return ""; }
  std::string stream_end() override { return ""; }

  HttpResponse complete() override {
    json scores = json::array(), token_logprobs = json::array();
    for (size_t i = 0; i < choices_.size(); ++i) {
      // The first (only) step's distribution: the one after the whole sequence.
      const std::vector<std::vector<float>>& steps = choices_[i]->total().token_ids_logprobs;
      if (steps.empty() || steps[0].size() != request_.label_token_ids[i].size()) {
        return error_response(
            500, "the engine returned no label log probabilities for item " + std::to_string(i));
      }
      scores.push_back(scores_of(steps[0], request_.apply_softmax, request_.temperature));
      token_logprobs.push_back(steps[0]);
    }
    return score_response(ctx_, request_, std::move(scores), std::move(token_logprobs),
                          prompt_tokens_);
  }

  const ScoreRequest request_;
  const int64_t prompt_tokens_;
};

// On a pool thread: tokenizes the sequences and submits one request per item.
Reply prepare_score(ServerContext& ctx, const ScoreRequest& req) {
  SamplingInput greedy;  // none of the server's sampling defaults: the model's own distribution
  greedy.temperature = 0;
  greedy.max_tokens = 1;
  std::vector<ChoicePlan> plans;
  int64_t prompt_tokens = 0;
  for (size_t i = 0; i < req.sequences.size(); ++i) {
    for (int32_t id : req.label_token_ids[i]) {
      if (id >= ctx.info.vocab_size) {
        return Reply::of(error_response(
            400,
            "Token ID " + std::to_string(id) +
                " is out of vocabulary (vocab size: " + std::to_string(ctx.info.vocab_size) + ")",
            "label_token_ids"));
      }
    }
    std::vector<int32_t> ids = prompt_ids(ctx, req.sequences[i]);
    prompt_tokens += static_cast<int64_t>(ids.size());
    auto built = build_engine_request(ctx, greedy, std::move(ids), 0, std::nullopt);
    if (!built.ok()) return Reply::of(error_response(built.status()));
    ChoicePlan plan{std::move(built).value(), choice_options(greedy, false)};
    plan.request.return_logprob = true;
    plan.request.token_ids_logprob = req.label_token_ids[i];
    plans.push_back(std::move(plan));
  }
  if (plans.empty()) {  // no items: no scores
    return Reply::of(score_response(ctx, req, json::array(), json::array(), 0));
  }
  auto choices = submit_choices(ctx, std::move(plans));
  if (!choices.ok()) return Reply::of(error_response(choices.status()));
  return Reply::later(
      std::make_unique<ScoreReply>(ctx, std::move(choices).value(), req, prompt_tokens), false);
}

}  // namespace

Reply handle_score(ServerContext& ctx, const HttpRequest& request) {
  auto parsed = parse_score_request(request.body);
  if (!parsed.ok()) return Reply::of(error_response(parsed.status()));
  if (Status s = check_prompts(ctx, parsed->sequences, "items"); !s.ok()) {
    return Reply::of(error_response(s));
  }
  auto shared = std::make_shared<const ScoreRequest>(std::move(parsed).value());
  return PreparedReply::submit(
      ctx, false, [&ctx, shared](const std::atomic<bool>&) { return prepare_score(ctx, *shared); });
}

}  // namespace sgl::server
